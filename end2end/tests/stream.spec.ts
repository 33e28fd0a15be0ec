import { expect, test, type Page, type Request } from "@playwright/test";
import { kubectl, poolDetail, pools } from "./helpers";

// Everything these pages show arrives on the tab's one stream: once a page is live it asks the
// server for nothing else, and a preemption's card appears with no request of the page's.
const WINDOW_MS = 10_000;

function recordRequests(page: Page): () => string[] {
  const seen: string[] = [];
  const on = (r: Request) => seen.push(`${r.method()} ${new URL(r.url()).pathname}`);
  page.on("request", on);
  return () => {
    page.off("request", on);
    return seen;
  };
}

async function spotPool(request: Parameters<typeof pools>[0]) {
  const spot = (await pools(request)).filter(
    (p) => p.compute_class === "spot" && p.cluster.startsWith("spotboard-us-") && (p.current_nodes ?? 0) > 1,
  );
  expect(spot.length, "a CKS spot pool with nodes").toBeGreaterThan(0);
  return spot[0];
}

test("/preemptions polls nothing: a preemption's card arrives on the stream", async ({ page, request }) => {
  const pool = await spotPool(request);
  const node = (await poolDetail(request, pool.cluster, pool.name)).nodes.find(
    (n) => !n.pending_preemption && !n.cordoned,
  );
  expect(node, "a node not being preempted").toBeTruthy();

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByTestId("readiness")).not.toContainText("Auditing", { timeout: 10_000 });
  const stop = recordRequests(page);
  const started = Date.now();
  kubectl(pool.cluster, ["annotate", "node", node!.name, "sim.spotboard.dev/preempt=now"]);
  const card = page.locator(`[data-testid="preemption"][data-node="${node!.name}"]`);
  await expect(card).toBeVisible({ timeout: 5_000 });
  console.log(`annotation → card on /preemptions: ${Date.now() - started} ms (kubectl included)`);
  await page.waitForTimeout(Math.max(0, WINDOW_MS - (Date.now() - started)));
  expect(stop(), "requests made by /preemptions while live").toEqual([]);
});

test("a pool page polls nothing: its nodes, events, preemptions and audit all stream", async ({ page, request }) => {
  const pool = await spotPool(request);
  await page.goto(`/pools/${pool.cluster}/${pool.name}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByTestId("pool-preemptions")).toBeVisible();
  await expect(page.getByTestId("readiness")).not.toContainText("Auditing", { timeout: 10_000 });
  const stop = recordRequests(page);
  await page.waitForTimeout(WINDOW_MS);
  expect(stop(), "requests made by the pool page while live").toEqual([]);
});

test("/capacity polls nothing: the grid's cells stream", async ({ page }) => {
  await page.goto("/capacity");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByTestId("capacity-grid").locator("td.cap-cell").first()).toBeVisible();
  const stop = recordRequests(page);
  await page.waitForTimeout(WINDOW_MS);
  expect(stop(), "requests made by /capacity while live").toEqual([]);
});

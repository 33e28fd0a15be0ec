import { type ConsoleMessage, expect, test, type Page, type Request } from "@playwright/test";
import { kubectl, poolDetail, pools } from "./helpers";

// Everything these pages show arrives on the tab's one stream: once a page is live it asks the
// server for nothing else, and a preemption's card appears with no request of the page's.
const WINDOW_MS = 10_000;

// The requests a page makes, with the console lines that explain a reconnect ("reloading
// snapshot" names the delta the store refused), so a failure says why the stream reopened.
function recordRequests(page: Page): () => string[] {
  const seen: string[] = [];
  const on = (r: Request) => seen.push(`${r.method()} ${new URL(r.url()).pathname}`);
  const said = (m: ConsoleMessage) => {
    // spotboard's own lines only (a debug build's framework warnings are not requests).
    if (m.text().startsWith("spotboard:")) seen.push(`console ${m.type()}: ${m.text()}`);
  };
  page.on("request", on);
  page.on("console", said);
  return () => {
    page.off("request", on);
    page.off("console", said);
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
  const free = (await poolDetail(request, pool.cluster, pool.name)).nodes.filter((n) => !n.pending_preemption && !n.cordoned);
  expect(free.length, "two nodes not being preempted").toBeGreaterThanOrEqual(2);
  const [preempted, host] = free;
  // A bare pod of our own on another of the pool's nodes: the next audit names it (one
  // replica, no budget, no preStop hook), and no audit before it can have.
  const probe = `stream-probe-${Date.now()}`;
  const workload = `kube-system/Pod/${probe}`;

  await page.goto(`/pools/${pool.cluster}/${pool.name}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByTestId("pool-preemptions")).toBeVisible();
  await expect(page.getByTestId("readiness")).not.toContainText("Auditing", { timeout: 10_000 });
  const nodeRow = page.getByTestId("nodes").locator(`tr[data-node="${preempted.name}"]`);
  await expect(nodeRow.locator("td[data-preemption]")).toHaveAttribute("data-preemption", "none");
  const stop = recordRequests(page);
  const started = Date.now();
  try {
    kubectl(pool.cluster, ["annotate", "node", preempted.name, "sim.spotboard.dev/preempt=now"]);
    kubectl(
      pool.cluster,
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: probe, namespace: "kube-system" },
        spec: { nodeName: host.name, containers: [{ name: "probe", image: "registry.k8s.io/pause:3.10" }] },
      }),
    );
    // Nodes: the preempted node is cordoned and pending, live.
    await expect(nodeRow.locator("td[data-preemption]")).toHaveAttribute("data-preemption", "pending", { timeout: 5_000 });
    // Events: its notice.
    await expect(
      page.getByTestId("events").locator("tr", { hasText: preempted.name }).filter({ hasText: "Preemption pending" }).first(),
    ).toBeVisible({ timeout: 5_000 });
    // Preemptions: its card.
    await expect(
      page.getByTestId("pool-preemptions").locator(`[data-testid="preemption"][data-node="${preempted.name}"]`),
    ).toBeVisible({ timeout: 5_000 });
    // Audit: the server audits every 15 s while the page is open.
    await expect(
      page.getByTestId("readiness").locator(`tr[data-workload="${workload}"] li[data-check="SingleReplica"]`),
    ).toContainText("one replica", { timeout: 20_000 });
    console.log(`pool page: annotation and pod → node, event, card and audit: ${Date.now() - started} ms (kubectl included)`);
    await page.waitForTimeout(Math.max(0, WINDOW_MS - (Date.now() - started)));
    expect(stop(), "requests made by the pool page while live").toEqual([]);
  } finally {
    kubectl(pool.cluster, ["delete", "pod", "-n", "kube-system", probe, "--now", "--ignore-not-found", "--wait=false"]);
  }
});

test("/capacity polls nothing: the grid's cells stream", async ({ page, request }) => {
  // The embedded scenario's b200-spot-burst asks for B200 Spot nodes that its zone has none
  // of: its nodes stay queued, so raising its target raises the cell's queued count.
  const burst = (await pools(request)).find((p) => p.name === "b200-spot-burst");
  expect(burst, "the scenario's b200-spot-burst pool").toBeTruthy();
  const { cluster, zone, target_nodes: target } = burst!;
  const raised = target + 3;

  await page.goto("/capacity");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByTestId("capacity-grid").locator("td.cap-cell").first()).toBeVisible();
  const cell = page.getByTestId("capacity-grid").locator(`tr[data-type="b200-8x"] td[data-zone="${zone}"]`);
  // Queued and delivered nodes over the zone's B200 spot pools (nodes still booting are neither).
  const asked = async () => {
    const m = /queued (\d+) · delivered (\d+)/.exec(await cell.innerText());
    return m ? Number(m[1]) + Number(m[2]) : null;
  };
  await expect.poll(asked).toBe(target);
  const stop = recordRequests(page);
  const started = Date.now();
  try {
    kubectl(cluster, ["patch", "nodepool", "b200-spot-burst", "--type", "merge", "-p", JSON.stringify({ spec: { targetNodes: raised } })]);
    await expect.poll(asked, { timeout: 8_000 }).toBe(raised);
    console.log(`targetNodes ${target} → ${raised}: the cell followed in ${Date.now() - started} ms (kubectl included)`);
    await page.waitForTimeout(Math.max(0, WINDOW_MS - (Date.now() - started)));
    expect(stop(), "requests made by /capacity while live").toEqual([]);
  } finally {
    kubectl(cluster, ["patch", "nodepool", "b200-spot-burst", "--type", "merge", "-p", JSON.stringify({ spec: { targetNodes: target } })]);
  }
});

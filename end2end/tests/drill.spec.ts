import { expect, test } from "@playwright/test";
import { poolDetail, pools } from "./helpers";

// The preemption drill from a spot pool's page, as the local user: the dry run lists the
// node's pods and the CKS window; Run stays disabled until the node's name is typed; the
// drill's card (on the pool page's preemptions, as on /preemptions) is marked "drill" while it
// runs; Abort restores the node and the card closes.
test("drill: dry run, confirm, run and abort from the pool page", async ({ page, request }) => {
  const spot = (await pools(request)).filter(
    (p) => p.compute_class === "spot" && p.cluster.startsWith("spotboard-us-") && (p.current_nodes ?? 0) > 1,
  );
  expect(spot.length, "a CKS spot pool with nodes").toBeGreaterThan(0);
  // The middle one: the stream tests preempt in the first, the survival test in the last.
  const pool = spot[Math.floor(spot.length / 2)];
  const path = `/pools/${encodeURIComponent(pool.cluster)}/${encodeURIComponent(pool.name)}`;
  await page.goto(path);
  await expect(page.getByTestId("conn")).toHaveText("live");
  const panel = page.getByTestId("drill-panel");
  await expect(panel).toBeVisible();
  const select = panel.getByTestId("drill-node");
  // Hydrated and listing the pool's free spot nodes.
  await expect.poll(async () => (await select.locator("option").count()), { timeout: 20_000 }).toBeGreaterThan(1);
  const node = (await select.locator("option").nth(1).getAttribute("value"))!;
  await select.selectOption(node);

  await panel.getByTestId("drill-dry-run").click();
  await expect(panel.getByTestId("drill-message")).toContainText("dry run: the drill may start");
  await expect(panel.getByTestId("drill-phases")).toContainText("T+120 s draining");
  const listed = await panel.getByTestId("drill-pods").locator("tbody tr").count();
  const onNode = (await poolDetail(request, pool.cluster, pool.name)).nodes.find((n) => n.name === node);
  expect(onNode, "the node is the pool's").toBeTruthy();
  expect(listed).toBeGreaterThan(0);

  const run = panel.getByTestId("drill-run");
  await expect(run).toBeDisabled();
  await panel.getByTestId("drill-confirm").fill(node.slice(0, -1));
  await expect(run).toBeDisabled();
  await panel.getByTestId("drill-confirm").fill(node);
  await expect(run).toBeEnabled();
  await run.click();
  await expect(panel.getByTestId("drill-message")).toContainText(`drill started on ${node}`);
  // The node is cordoned by the drill, as the hub sees it.
  await expect
    .poll(async () => (await poolDetail(request, pool.cluster, pool.name)).nodes.find((n) => n.name === node)?.cordoned)
    .toBe(true);

  // Its card on this page's preemptions, live, marked a drill.
  await expect(page.locator(`article[data-node="${node}"]`).getByTestId("drill")).toHaveText("drill");

  await panel.getByTestId("drill-abort").click();
  await expect(panel.getByTestId("drill-message")).toContainText("drill aborted");
  await expect
    .poll(async () => (await poolDetail(request, pool.cluster, pool.name)).nodes.find((n) => n.name === node)?.cordoned)
    .toBe(false);
  // Over: the drill's card closes.
  await expect(page.locator(`article[data-node="${node}"]`)).toHaveCount(0);
});

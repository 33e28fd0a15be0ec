import { expect, test } from "@playwright/test";
import { kubectl, poolDetail, pools } from "../tests/helpers";

// Where the README's images go, from end2end/.
const out = "../docs/img";

test("the Node Pools dashboard", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.locator("table tbody tr").first()).toBeVisible();
  await page.screenshot({ path: `${out}/dashboard.png` });
});

test("a preemption timeline", async ({ page, request }) => {
  // A CKS spot node with pods: its card shows the notice window's countdown and blast radius.
  const spot = (await pools(request)).filter(
    (p) => p.compute_class === "spot" && (p.current_nodes ?? 0) > 0 && (p.zone ?? "").startsWith("US-"),
  );
  const pool = spot[0] ?? (await pools(request)).find((p) => p.compute_class === "spot" && (p.current_nodes ?? 0) > 0);
  expect(pool, "a spot pool with nodes").toBeTruthy();
  const detail = await poolDetail(request, pool!.cluster, pool!.name);
  const node = detail.nodes.find((n) => !n.pending_preemption && !n.cordoned);
  expect(node, "a node not being preempted").toBeTruthy();

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  kubectl(pool!.cluster, ["annotate", "node", node!.name, "sim.spotboard.dev/preempt=now"]);
  const card = page.locator(`[data-testid="preemption"][data-node="${node!.name}"]`);
  await expect(card).toBeVisible();
  await expect(card.getByTestId("blast-radius").locator("tbody tr").first()).toBeVisible();
  await expect(page.locator("#preemption-chart canvas")).toBeVisible();
  // Let the chart finish its first animation.
  await page.waitForTimeout(1_500);
  await page.screenshot({ path: `${out}/preemption.png` });
});

import { expect, test } from "@playwright/test";
import { kubectl, nodeToPreempt, pools } from "../tests/helpers";

// Where the README's images go, from end2end/.
const out = "../docs/img";

test("the Node Pools dashboard", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.locator("table tbody tr").first()).toBeVisible();
  await page.screenshot({ path: `${out}/dashboard.png` });
});

test("a preemption timeline", async ({ page, request }) => {
  // A CKS spot node (its zone is upper case) with pods: its card shows the notice window's
  // countdown and the blast radius.
  const spot = (await pools(request)).filter((p) => p.compute_class === "spot" && (p.current_nodes ?? 0) > 0);
  const pool = spot.find((p) => (p.zone ?? "").startsWith("US-")) ?? spot[0];
  expect(pool, "a spot pool with nodes").toBeTruthy();
  const node = await nodeToPreempt(request, pool!);

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  kubectl(pool!.cluster, ["annotate", "node", node.name, "sim.spotboard.dev/preempt=now"]);
  const card = page.locator(`[data-testid="preemption"][data-node="${node.name}"]`);
  await expect(card.getByTestId("blast-radius").locator("tbody tr").first()).toBeVisible();
  await expect(page.locator("#preemption-chart canvas")).toBeVisible();
  // Let the chart finish its first animation.
  await page.waitForTimeout(1_500);
  await page.screenshot({ path: `${out}/preemption.png` });
});

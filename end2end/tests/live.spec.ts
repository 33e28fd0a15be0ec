import { expect, test } from "@playwright/test";
import { kubectl, pools, poolDetail } from "./helpers";

test("a NodePool applied with kubectl appears in the open page without a reload", async ({ page, request }) => {
  const context = (await pools(request))[0].cluster;
  const name = `e2e-live-${Date.now() % 100000}`;
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  // A marker on the window proves the page was not reloaded.
  await page.evaluate(() => ((window as any).__noReload = true));

  kubectl(context, ["apply", "-f", "-"], `apiVersion: compute.coreweave.com/v1alpha1
kind: NodePool
metadata:
  name: ${name}
spec:
  computeClass: spot
  instanceType: gd-8xl40s-i128
  targetNodes: 1
`);
  const row = page.locator(`tr[data-pool="${name}"]`);
  await expect(row).toBeVisible({ timeout: 5_000 });
  await expect(row.locator(".class-spot")).toHaveText("spot");
  // The controller reconciles it: Validated arrives live too.
  await expect(row.locator('.cond[data-type="Validated"]')).toHaveAttribute("aria-label", /^Validated: True/, { timeout: 10_000 });
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);

  kubectl(context, ["delete", "nodepool", name]);
  await expect(row).toHaveCount(0, { timeout: 5_000 });
  await expect(poolDetail(request, context, name)).rejects.toThrow(/404/);
});

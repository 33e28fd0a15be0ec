import { expect, test } from "@playwright/test";
import { nodeToPreempt, pools } from "./helpers";

// "Play a preemption" on the embedded cluster: a spot node's row starts its preemption, and
// only spot nodes have the button.
test("Play a preemption on a spot node's row puts it under notice", async ({ page, request }) => {
  const all = await pools(request);
  const spot = all.find((p) => p.name === "cpu-spot-batch" && (p.current_nodes ?? 0) > 0);
  expect(spot, "a CKS spot pool with nodes").toBeTruthy();
  const node = await nodeToPreempt(request, spot!);
  await page.goto(`/pools/${encodeURIComponent(spot!.cluster)}/${spot!.name}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  const row = page.locator(`tr[data-node="${node.name}"]`);
  const button = row.getByTestId("play-preemption");
  await expect(button).toBeVisible();
  await button.click();
  // At the tests' speed (60) the notice window passes in seconds: the preemptions list keeps
  // the node once it started, under notice or removed.
  await expect
    .poll(async () => {
      const r = await request.get("/api/v1/preemptions");
      return ((await r.json()).nodes as { node: string }[]).some((n) => n.node === node.name);
    }, { timeout: 10_000 })
    .toBe(true);
  await expect(button).toHaveCount(0);

  // An on-demand pool's nodes have no button.
  const onDemand = all.find((p) => p.name === "example-nodepool")!;
  await page.goto(`/pools/${encodeURIComponent(onDemand.cluster)}/${onDemand.name}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.locator("tr[data-node]").first()).toBeVisible();
  await expect(page.getByTestId("play-preemption")).toHaveCount(0);
});

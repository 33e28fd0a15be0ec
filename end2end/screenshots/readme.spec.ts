import { expect, test } from "@playwright/test";

// Where the README's images go, from end2end/.
const out = "../docs/img";

// A fresh server (`./tasks.sh screenshots` starts one with the default flags): the demo's
// first preemption starts by itself within a minute, so nothing here preempts anything. This
// is also the check that a newcomer's first visit to /preemptions has a live countdown within
// 90 s of the page answering.
test("a preemption timeline, by itself within 90 s", async ({ page }) => {
  const answered = Date.now();
  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  const card = page.getByTestId("preemption").first();
  await expect(card, "a preemption under way with no action").toBeVisible({ timeout: 90_000 });
  const countdown = card.getByTestId("countdown");
  await expect(countdown).toHaveText(/\d/);
  expect(Date.now() - answered, "ms until the first countdown").toBeLessThan(90_000);
  // Live: the countdown moves on its own.
  const before = await countdown.innerText();
  await expect.poll(() => countdown.innerText(), { timeout: 5_000 }).not.toBe(before);
  await expect(card.getByTestId("blast-radius").locator("tbody tr").first()).toBeVisible();
  await expect(page.locator("#preemption-chart canvas")).toBeVisible();
  // Let the chart finish its first animation.
  await page.waitForTimeout(1_500);
  await page.screenshot({ path: `${out}/preemption.png` });
});

test("the Node Pools dashboard, a preemption under way", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.locator("table tbody tr").first()).toBeVisible();
  await expect(page.getByTestId("fleet-preempting").locator(".value")).not.toHaveText("0");
  await page.screenshot({ path: `${out}/dashboard.png` });
});

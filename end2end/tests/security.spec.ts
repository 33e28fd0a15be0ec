import { expect, test } from "@playwright/test";
import { chromiumArgs, executablePath } from "../chromium";

// DNS rebinding, as a browser meets it: a page on a foreign name whose DNS answer is our
// loopback address. Chromium's host resolver rules play the rebinding attacker's DNS.
const base = new URL(process.env.SPOTBOARD_BASE_URL ?? "http://127.0.0.1:3000");
const port = base.port || "80";

test.use({
  launchOptions: {
    executablePath,
    args: [...chromiumArgs, "--host-resolver-rules=MAP rebound.example 127.0.0.1"],
  },
});

test("a foreign host name that resolves to spotboard gets 421, not the dashboard", async ({ page }) => {
  const response = await page.goto(`http://rebound.example:${port}/`);
  expect(response?.status()).toBe(421);
  await expect(page.locator("body")).toContainText("--allowed-host");
  await expect(page.getByTestId("conn")).toHaveCount(0);
  // Its scripts cannot reach the API either (same origin to the attacker's page).
  const api = await page.evaluate(async () => (await fetch("/api/v1/pools")).status);
  expect(api).toBe(421);
});

test("the names spotboard answers to still work in the same browser", async ({ page }) => {
  await page.goto(`http://localhost:${port}/`);
  await expect(page.getByTestId("conn")).toHaveText("live");
});

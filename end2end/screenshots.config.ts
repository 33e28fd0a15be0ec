import { defineConfig, devices } from "@playwright/test";
import { chromiumArgs, executablePath } from "./chromium";

// The README's screenshots (`./tasks.sh screenshots`): the demo at 1440 x 900 in the light theme,
// written to docs/img/. Kept out of `./tasks.sh e2e`: it asserts only what it needs to draw.
export default defineConfig({
  testDir: "./screenshots",
  timeout: 5 * 60_000,
  expect: { timeout: 60_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  globalSetup: "./global-setup.ts",
  use: {
    baseURL: process.env.SPOTBOARD_BASE_URL ?? "http://127.0.0.1:3000",
    trace: "off",
    colorScheme: "light",
    viewport: { width: 1440, height: 900 },
    launchOptions: { executablePath, args: chromiumArgs },
  },
  projects: [{ name: "chromium", use: { ...devices["Desktop Chrome"], viewport: { width: 1440, height: 900 } } }],
});

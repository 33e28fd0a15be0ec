import { defineConfig, devices } from "@playwright/test";
import { chromiumArgs, executablePath } from "./chromium";

// Browsers cannot be downloaded here: Debian's Chromium is used (shared/TOOLCHAIN.md).
export default defineConfig({
  testDir: "./tests",
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  globalSetup: "./global-setup.ts",
  use: {
    baseURL: process.env.SPOTBOARD_BASE_URL ?? "http://127.0.0.1:3000",
    trace: "off",
    launchOptions: { executablePath, args: chromiumArgs },
  },
  projects: [{ name: "chromium", use: { ...devices["Desktop Chrome"] } }],
});

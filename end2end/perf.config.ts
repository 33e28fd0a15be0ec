import { defineConfig, devices } from "@playwright/test";
import { chromiumArgs, executablePath } from "./chromium";

// The perf spec (`./tasks.sh perf`): prints figures, asserts only that it could measure them.
// Kept out of `./tasks.sh e2e`: it needs a release build and a 10k-node cluster.
export default defineConfig({
  testDir: "./perf",
  timeout: 15 * 60_000,
  expect: { timeout: 60_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL: process.env.SPOTBOARD_BASE_URL ?? "http://127.0.0.1:3100",
    trace: "off",
    launchOptions: { executablePath, args: chromiumArgs },
  },
  projects: [{ name: "chromium", use: { ...devices["Desktop Chrome"] } }],
});

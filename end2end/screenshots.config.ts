import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

// The README's screenshots (`./tasks.sh screenshots`): the demo at 1440 x 900 in the light theme,
// written to docs/img/. Kept out of `./tasks.sh e2e`: it asserts only what it needs to draw.
const viewport = { width: 1440, height: 900 };
export default defineConfig({
  ...base,
  testDir: "./screenshots",
  timeout: 5 * 60_000,
  expect: { timeout: 60_000 },
  use: { ...base.use, colorScheme: "light", viewport },
  projects: (base.projects ?? []).map((p) => ({ ...p, use: { ...p.use, viewport } })),
});

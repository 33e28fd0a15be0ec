import AxeBuilder from "@axe-core/playwright";
import { expect, type Page, test } from "@playwright/test";
import { pools } from "./helpers";

// Every page at the widths people use, in both themes: nothing wider than the window, no text
// cut off inside a table cell, and a screenshot of each kept for review (not compared pixel by
// pixel: the scenario moves). Then an accessibility pass with axe-core.

const WIDTHS = [1280, 1440, 1920];
const THEMES = ["light", "dark"] as const;

async function pages(request: Parameters<typeof pools>[0]): Promise<string[]> {
  const pool = (await pools(request)).find((p) => p.name === "example-nodepool");
  expect(pool, "the scenario's example pool").toBeTruthy();
  return [
    "/",
    "/preemptions",
    "/capacity",
    "/savings",
    "/capacity-finder",
    "/pools/new",
    `/pools/${encodeURIComponent(pool!.cluster)}/${pool!.name}`,
  ];
}

/** What overflows: the document past the window, and table cells whose text is cut off. */
async function overflow(page: Page) {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const cells = [...document.querySelectorAll("td, th")]
      .filter((c) => {
        const style = getComputedStyle(c);
        // A cell that hides what does not fit (rather than growing or wrapping) clips it.
        return style.overflow !== "visible" && c.scrollWidth > c.clientWidth + 1;
      })
      .map((c) => (c.textContent ?? "").trim().slice(0, 60));
    return { page: doc.scrollWidth - window.innerWidth, cells };
  });
}

test("every page fits 1280, 1440 and 1920 px in light and dark", async ({ page, request }, info) => {
  test.setTimeout(180_000);
  const paths = await pages(request);
  for (const theme of THEMES) {
    await page.emulateMedia({ colorScheme: theme });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      for (const path of paths) {
        await page.goto(path);
        await expect(page.getByTestId("conn")).toHaveText("live");
        await expect(page.locator("main h1").first()).toBeVisible();
        const o = await overflow(page);
        expect(o.page, `${path} at ${width} px (${theme}) is wider than the window`).toBeLessThanOrEqual(0);
        expect(o.cells, `${path} at ${width} px (${theme}): cut-off cells`).toEqual([]);
        const name = `${path === "/" ? "dashboard" : path.slice(1).replaceAll("/", "_")}-${width}-${theme}.png`;
        await page.screenshot({ path: info.outputPath(name), fullPage: false });
      }
    }
  }
});

test("no serious or critical accessibility violations on any page", async ({ page, request }) => {
  test.setTimeout(120_000);
  for (const theme of THEMES) {
    await page.emulateMedia({ colorScheme: theme });
    for (const path of await pages(request)) {
      await page.goto(path);
      await expect(page.getByTestId("conn")).toHaveText("live");
      await expect(page.locator("main h1").first()).toBeVisible();
      const result = await new AxeBuilder({ page }).analyze();
      const bad = result.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
      expect(bad, `${path} (${theme})`).toEqual([]);
    }
  }
});

import AxeBuilder from "@axe-core/playwright";
import { expect, type Page, type TestInfo, test } from "@playwright/test";
import { pools } from "./helpers";

// Every page at the widths people use, in both themes: nothing wider than the window, no text
// cut off inside a table cell, no button or link clipped or broken inside a word, no table
// that needs sideways scrolling at 1440 px, and the pools table dense enough to read the demo
// fleet at a glance. A screenshot of each page is attached to the report (not compared pixel
// by pixel: the scenario moves). Then an accessibility pass with axe-core.

const WIDTHS = [1280, 1440, 1920];
const THEMES = ["light", "dark"] as const;
/** The window height the density checks count rows in (a 1440 × 900 laptop screen). */
const HEIGHT = 900;

async function pages(request: Parameters<typeof pools>[0]): Promise<string[]> {
  const pool = (await pools(request)).find((p) => p.name === "example-nodepool");
  expect(pool, "the scenario's example pool").toBeTruthy();
  return [
    "/",
    "/?density=compact",
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
        // Text truncated on purpose (an ellipsis, the full text in `title`) is not cut off.
        const truncated = style.textOverflow === "ellipsis" && c.getAttribute("title");
        return style.overflow !== "visible" && !truncated && c.scrollWidth > c.clientWidth + 1;
      })
      .map((c) => (c.textContent ?? "").trim().slice(0, 60));
    return { page: doc.scrollWidth - window.innerWidth, cells };
  });
}

/**
 * Buttons and links that cannot be read whole: clipped by the window or by a box that hides
 * its overflow, a button on more than one line, or a link broken inside a word (a link in a
 * sentence may wrap between words; a word cut in two, "US-" / "EAST-" / "04A", may not).
 */
async function badControls(page: Page) {
  return page.evaluate(() => {
    const bad: string[] = [];
    const label = (e: Element) => `${e.tagName.toLowerCase()} "${(e.textContent ?? "").trim().slice(0, 40)}"`;
    /** The number of distinct lines the rects lie on. */
    const lines = (rects: DOMRect[]) => {
      const tops: number[] = [];
      for (const r of rects) {
        if (r.width < 1 || r.height < 1) continue;
        if (!tops.some((t) => Math.abs(t - r.top) < r.height / 2)) tops.push(r.top);
      }
      return tops.length;
    };
    const controls = document.querySelectorAll("button, a, summary, [role=button]");
    for (const e of controls) {
      const el = e as HTMLElement;
      if (!el.checkVisibility() || el.closest(".sr-only")) continue;
      const rect = el.getBoundingClientRect();
      // Off the left edge on purpose: the skip link until focused.
      if (rect.width < 1 || rect.right <= 0) continue;
      if (rect.right > window.innerWidth + 1) bad.push(`${label(el)} runs past the window`);
      // A box between the control and the page that hides overflow (not one that scrolls).
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const s = getComputedStyle(p);
        if (s.overflowX === "hidden" || s.overflowX === "clip") {
          const box = p.getBoundingClientRect();
          if (rect.right > box.right + 1 || rect.left < box.left - 1) bad.push(`${label(el)} is clipped by its ${p.tagName.toLowerCase()}.${p.className}`);
          break;
        }
      }
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible")
        bad.push(`${label(el)} cuts off its own text`);
      const isButton = el.matches("button, summary, [role=button], a.button");
      const range = document.createRange();
      range.selectNodeContents(el);
      if (isButton && lines([...range.getClientRects()]) > 1) {
        bad.push(`${label(el)} wraps onto ${lines([...range.getClientRects()])} lines`);
        continue;
      }
      // Each word of the control's text on one line.
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const text = n.textContent ?? "";
        for (const m of text.matchAll(/\S+/g)) {
          const r = document.createRange();
          r.setStart(n, m.index!);
          r.setEnd(n, m.index! + m[0].length);
          if (lines([...r.getClientRects()]) > 1) bad.push(`${label(el)} breaks inside "${m[0]}"`);
        }
      }
    }
    return [...new Set(bad)];
  });
}

/** Tables (or their scrolling wrappers) wider than the space they have. */
async function sidewaysTables(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll("table")]
      .filter((t) => (t as HTMLElement).checkVisibility())
      .flatMap((t) => {
        const wrap = t.closest(".table-wrap") ?? t.parentElement!;
        const over = Math.max(wrap.scrollWidth - wrap.clientWidth, t.getBoundingClientRect().right - window.innerWidth);
        const name = t.getAttribute("data-testid") ?? t.getAttribute("aria-label") ?? t.className ?? "table";
        return over > 1 ? [`${name} needs ${Math.round(over)} px of sideways scrolling`] : [];
      }),
  );
}

/**
 * The pools table's rows: how many end within the first `HEIGHT` px of the page, and those
 * whose cells hold more than one line of text.
 */
async function poolRows(page: Page, height: number) {
  return page.evaluate((height) => {
    const rows = [...document.querySelectorAll("table[data-testid=pools] tbody tr[data-pool]")];
    const lineCount = (cell: Element) => {
      const tops: number[] = [];
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const p = n.parentElement;
        if (!(n.textContent ?? "").trim() || !p || !p.checkVisibility() || p.closest(".sr-only")) continue;
        const r = document.createRange();
        r.selectNodeContents(n);
        for (const rect of r.getClientRects()) {
          if (rect.width < 1) continue;
          if (!tops.some((t) => Math.abs(t - rect.top) < rect.height / 2)) tops.push(rect.top);
        }
      }
      return tops.length;
    };
    const multi = rows
      .filter((row) => [...row.children].some((c) => lineCount(c) > 1))
      .map((row) => {
        const cells = [...row.children].filter((c) => lineCount(c) > 1).map((c) => c.getAttribute("data-col") ?? "name");
        return `${row.getAttribute("data-pool")} (${cells.join(", ")})`;
      });
    const within = rows.filter((r) => r.getBoundingClientRect().bottom + window.scrollY <= height).length;
    return { total: rows.length, within, multi };
  }, height);
}

async function shoot(page: Page, info: TestInfo, path: string, width: number, theme: string) {
  const slug = path === "/" ? "dashboard" : path.slice(1).replace(/[/?=&]/g, "_");
  const file = info.outputPath(`${slug}-${width}-${theme}.png`);
  await page.screenshot({ path: file, fullPage: false });
  await info.attach(`${slug}-${width}-${theme}`, { path: file, contentType: "image/png" });
}

for (const theme of THEMES) {
  for (const width of WIDTHS) {
    test(`every page fits ${width} px (${theme})`, async ({ page, request }, info) => {
      test.setTimeout(120_000);
      const paths = await pages(request);
      await page.emulateMedia({ colorScheme: theme });
      await page.setViewportSize({ width, height: HEIGHT });
      const problems: string[] = [];
      for (const path of paths) {
        await page.goto(path);
        await expect(page.getByTestId("conn")).toHaveText("live");
        await expect(page.locator("main h1").first()).toBeVisible();
        if (path.startsWith("/capacity-finder")) await expect(page.getByTestId("finder-results")).toBeVisible();
        const o = await overflow(page);
        if (o.page > 0) problems.push(`${path}: the page is ${o.page} px wider than the window`);
        for (const c of o.cells) problems.push(`${path}: cut-off cell "${c}"`);
        for (const c of await badControls(page)) problems.push(`${path}: ${c}`);
        if (width >= 1440) for (const t of await sidewaysTables(page)) problems.push(`${path}: ${t}`);
        if (path === "/" || path.startsWith("/?")) {
          const rows = await poolRows(page, HEIGHT);
          for (const r of rows.multi) problems.push(`${path}: pool row on more than one line: ${r}`);
        }
        await shoot(page, info, path, width, theme);
      }
      expect(problems, `at ${width} px (${theme})`).toEqual([]);
    });
  }

  test(`the pools table reads at a glance at 1440 × 900 (${theme})`, async ({ page }, info) => {
    await page.emulateMedia({ colorScheme: theme });
    await page.setViewportSize({ width: 1440, height: HEIGHT });
    for (const [path, least] of [
      ["/", 15],
      ["/?density=compact", 20],
    ] as const) {
      await page.goto(path);
      await expect(page.getByTestId("conn")).toHaveText("live");
      await expect(page.getByTestId("pools")).toBeVisible();
      const rows = await poolRows(page, HEIGHT);
      expect(rows.total, "the demo fleet's pools on one page").toBeGreaterThanOrEqual(least);
      expect(rows.within, `${path}: pools within the first ${HEIGHT} px`).toBeGreaterThanOrEqual(least);
      expect(rows.multi, `${path}: rows on more than one line`).toEqual([]);
      await shoot(page, info, path, 1440, theme);
    }
  });
}

test("no serious or critical accessibility violations on any page", async ({ page, request }) => {
  // Eight pages in two themes; axe takes seconds a page on two busy cores.
  test.setTimeout(300_000);
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

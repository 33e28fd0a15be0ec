import { expect, test } from "@playwright/test";

const usd = (s: string) =>
  "$" + Number(s).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

test("the savings page totals match the ledger of this run", async ({ page, request }) => {
  // A fixed window, so the page and the API price exactly the same node-hours.
  const to = new Date(Date.now() - 1000);
  const from = new Date(to.getTime() - 3600_000);
  const q = `from=${from.toISOString()}&to=${to.toISOString()}`;
  await expect
    .poll(async () => (await (await request.get(`/api/v1/ledger?${q}`)).json()).length, { timeout: 15_000 })
    .toBeGreaterThan(0);
  const ledger: { uid: string; capacity_type: string }[] = await (await request.get(`/api/v1/ledger?${q}`)).json();
  const report = await (await request.get(`/api/v1/savings?${q}`)).json();

  // Every lifetime in the ledger is priced in the report, and the totals are their sum.
  const lineUids = report.lines.map((l: { uid: string }) => l.uid).sort();
  expect(lineUids).toEqual(ledger.map((l) => l.uid).sort());
  let actual = 0;
  let baseline = 0;
  for (const l of report.lines) {
    if (l.unit_usd_h && l.on_demand_usd_h) {
      actual += Number(l.hours) * Number(l.unit_usd_h);
      baseline += Number(l.hours) * Number(l.on_demand_usd_h);
    }
  }
  expect(Math.abs(actual - Number(report.actual_usd))).toBeLessThan(0.05);
  expect(Math.abs(baseline - Number(report.baseline_usd))).toBeLessThan(0.05);
  expect(ledger.some((l) => l.capacity_type === "spot")).toBe(true);
  expect(Number(report.savings_usd)).toBeGreaterThan(0);

  await page.goto(`/savings?${q}`);
  await expect(page.getByTestId("fig-actual")).toHaveText(usd(report.actual_usd));
  await expect(page.getByTestId("fig-baseline")).toHaveText(usd(report.baseline_usd));
  await expect(page.getByTestId("fig-savings")).toContainText(usd(report.savings_usd));
  await expect(page.locator('[title*="priced nodes of hours in range"]').first()).toBeVisible();
  await expect(page.locator("#savings-chart canvas")).toBeVisible();
  await expect(page.getByRole("link", { name: "ledger CSV" })).toHaveAttribute("href", /\/api\/v1\/ledger\.csv\?/);

  // The what-if answers on the page: 100 % on-demand costs the same as all on-demand.
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.getByLabel("On-demand floor").fill("100");
  const rows = page.getByTestId("whatif").locator("td");
  await expect(rows.nth(1)).toHaveText(await rows.nth(2).innerText());

  const csv = await request.get(`/api/v1/ledger.csv?${q}`);
  expect(csv.headers()["content-type"]).toContain("text/csv");
  expect((await csv.text()).split("\n")[0]).toContain("end_reason");
});

test("the dashboard sums up what spot saves now", async ({ page, request }) => {
  await page.goto("/");
  await expect(page.getByTestId("savings-summary")).toContainText("Spot saves");
  // The page carries the report's totals for hydration, not its rows: at 10,000 nodes the
  // priced lines alone made the HTML 8 MB larger.
  const html = await (await request.get("/")).text();
  expect(html).toContain("run_rate");
  expect(html).not.toContain('lines\\":');
});

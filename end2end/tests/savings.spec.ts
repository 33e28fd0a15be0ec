import { expect, test } from "@playwright/test";

const usd = (s: string) =>
  (Number(s) < 0 ? "-$" : "$") +
  Math.abs(Number(s)).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

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
  // The idle spot GPUs are live, not of the range: the figure reads as the report's kind of amount.
  await expect(page.getByTestId("fig-idle-gpus")).toHaveText(/^\$[\d,]+\.\d\d\/h$/);
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
  expect((await csv.text()).split("\n")[0]).toContain("end_reason,preemption_t0,ready_at,work_lost_gpu_s,end_evidence");

  // Net savings: gross − capacity gap − lost work, and the lost work worked again from the
  // ledger's rows (the priced nodes preempted in the range, GPU-seconds ÷ 3600).
  const net = report.net;
  const priced = new Set(
    report.lines.filter((l: { unit_usd_h?: string; on_demand_usd_h?: string }) => l.unit_usd_h && l.on_demand_usd_h).map((l: { uid: string }) => l.uid),
  );
  const lifetimes: { uid: string; pool?: string; preemption_t0?: string; work_lost_gpu_s: number }[] = ledger as never;
  const inRange = (t?: string) => !!t && new Date(t) >= from && new Date(t) <= to;
  const lost = lifetimes
    .filter((l) => priced.has(l.uid) && l.pool && inRange(l.preemption_t0))
    .reduce((sum, l) => sum + l.work_lost_gpu_s / 3600, 0);
  expect(Math.abs(lost - Number(net.lost_work_gpu_hours))).toBeLessThan(0.01);
  expect(Number(net.gross_usd)).toBeCloseTo(Number(report.savings_usd), 2);
  expect(
    Math.abs(Number(net.gross_usd) - Number(net.gap_usd) - Number(net.lost_work_usd) - Number(net.net_usd)),
  ).toBeLessThan(0.015);
  await expect(page.getByTestId("fig-net")).toHaveText(`${usd(net.net_usd)} (${net.net_pct} %)`);
  await expect(page.getByTestId("net-sentence")).toContainText(
    `spot saves ${Number(net.gross_pct)} % gross, ${Number(net.net_pct)} % net`,
  );
  const byPool = page.locator('table.breakdown[data-by="pool"] tbody tr[data-row]');
  await expect(byPool.first()).toBeVisible();
  const poolRows: { key: string; net: { net_usd: string } }[] = report.breakdowns.find((b: [string, unknown]) => b[0] === "pool")[1];
  const first = byPool.first();
  const key = (await first.locator("td").first().innerText()).trim();
  const apiRow = poolRows.find((r) => r.key === key)!;
  await expect(first.locator('td[data-col="net"]')).toHaveText(usd(apiRow.net.net_usd));
});

type RunRate = { running_nodes: number; actual_usd_h: string; baseline_usd_h: string; difference_usd_h: string };

/** `$1,234.50` as a number. */
const amount = (s: string) => Number(s.replace(/[$,]/g, ""));
/** A figure shown to the cent is `usd` of this API amount. */
const shownAs = (shown: number, api: string | number) => Math.abs(shown - Number(api)) < 0.0051;

test("the dashboard sums up what spot saves now", async ({ page, request }) => {
  // What the ledger reports now: the run rate of the nodes running, and the last 24 h.
  const now = async () => {
    const r = await request.get("/api/v1/savings?range=24h");
    expect(r.ok(), `GET /api/v1/savings: ${r.status()}`).toBe(true);
    const body = await r.json();
    return { at: Date.now(), rate: body.run_rate as RunRate, saved: Number(body.savings_usd) };
  };
  const first = await now();
  expect(first.rate.running_nodes).toBeGreaterThan(0);
  expect(Number(first.rate.difference_usd_h), "the embedded fleet runs spot nodes: spot saves something").toBeGreaterThan(0);
  expect(
    Math.abs(Number(first.rate.baseline_usd_h) - Number(first.rate.actual_usd_h) - Number(first.rate.difference_usd_h)),
    "saved per hour = on-demand − paid",
  ).toBeLessThan(0.005);

  const summary = page.getByTestId("savings-summary");
  // The page's line is the run rate of one of the reports the ledger gave around it. The
  // fleet keeps changing (preemptions, replacements) and the server shares one headline among
  // the pages for 5 s, so the page and the API are read in turn until the page's figures are
  // those of a report of the last ~20 s. Each try loads the page again: a page reads the
  // headline again only when its fleet's node counts change, and one loaded just after the
  // last change can keep a headline from before it until the next.
  const line = /^Spot saves (\$[\d,]+\.\d\d)\/h now \((\$[\d,]+\.\d\d)\/h paid against (\$[\d,]+\.\d\d)\/h on-demand\) · (\$[\d,]+\.\d\d) saved in 24 h$/;
  const reports = [first];
  let tries = 0;
  await expect(async () => {
    tries += 1;
    const loaded = Date.now();
    await page.goto("/");
    await expect(summary).toContainText("Spot saves");
    reports.push(await now());
    const text = (await summary.innerText()).trim();
    reports.push(await now());
    const m = line.exec(text);
    expect(m, `the savings line reads as four amounts: "${text}"`).not.toBeNull();
    const [saves, paid, onDemand, saved] = m!.slice(1).map(amount);
    const recent = reports.slice(-12);
    const same = recent.find(
      (r) =>
        shownAs(saves, r.rate.difference_usd_h) &&
        shownAs(paid, r.rate.actual_usd_h) &&
        shownAs(onDemand, r.rate.baseline_usd_h),
    );
    expect(
      same,
      `"${text}" is the run rate of a report: ${JSON.stringify(recent.map((r) => r.rate))}`,
    ).toBeTruthy();
    expect(saves).toBeGreaterThan(0);
    // The 24 h total grows with time: the page's is at most the latest report's, and short of
    // it by no more than what spot saved since the page's headline was made (at most 5 s
    // before the page loaded; at the largest run rate seen, twice over).
    const latest = reports[reports.length - 1];
    const perHour = Math.max(...reports.map((r) => Number(r.rate.difference_usd_h)));
    const since = (latest.at - loaded + 10_000) / 3_600_000;
    expect(saved, `"${text}": 24 h saved against the API's ${latest.saved}`).toBeLessThanOrEqual(latest.saved + 0.01);
    expect(saved, `"${text}": 24 h saved against the API's ${latest.saved}`).toBeGreaterThanOrEqual(
      latest.saved - 2 * perHour * since - 0.01,
    );
  }).toPass({ timeout: 45_000 });
  console.log(`the dashboard's savings line matched the API's run rate on load ${tries}`);
  // The page carries the report's totals for hydration, not its rows: at 10,000 nodes the
  // priced lines alone made the HTML 8 MB larger.
  const html = await (await request.get("/")).text();
  expect(html).toContain("run_rate");
  expect(html).not.toContain('lines\\":');
});

test("a fallback pair shows what its on-demand nodes cost while spot was queued", async ({ page, request }) => {
  // The scenario's b200-on-demand names b200-spot-burst in spotboard.dev/fallback-for, and
  // b200-spot-burst waits for B200 Spot capacity from the start.
  type Pair = {
    cluster: string;
    on_demand_pool: string;
    spot_pools: string[];
    short_node_hours: string;
    extra_usd: string;
    move_back: string;
  };
  const b200 = async (): Promise<Pair | undefined> =>
    ((await (await request.get("/api/v1/fallback?range=24h")).json()).pairs as Pair[]).find(
      (p) => p.on_demand_pool === "b200-on-demand",
    );
  await expect.poll(async () => Number((await b200())?.extra_usd ?? 0), { timeout: 30_000 }).toBeGreaterThan(0);
  const before = (await b200())!;
  expect(before.spot_pools).toEqual(["b200-spot-burst"]);
  expect(before.move_back).toBe("wait");

  await page.goto("/savings?range=24h");
  const row = page.getByTestId("fallback").locator('tr[data-pair="b200-on-demand"]');
  await expect(row).toBeVisible();
  await expect(row.locator("td").nth(1)).toHaveText("b200-spot-burst");
  await expect(row.getByTestId("move-back")).toHaveText("keep");
  await expect(row.locator("td.advice")).toHaveAttribute(
    "title",
    "keep the 2 on-demand nodes: spot pool b200-spot-burst is short (Capacity: QueuedAwaitingCapacity)",
  );
  const shown = amount(await row.locator('td[data-col="extra"]').innerText());
  const after = (await b200())!;
  // The page priced the hours at its own instant, between the two API readings.
  expect(shown).toBeGreaterThanOrEqual(Number(before.extra_usd) - 0.0051);
  expect(shown).toBeLessThanOrEqual(Number(after.extra_usd) + 0.0051);
  await expect(page.getByTestId("fig-fallback")).toHaveText(/^\$[\d,]+\.\d\d$/);
  // One line per row: the advice is cut to its column, not wrapped.
  const box = await row.boundingBox();
  expect(box!.height, "one line of text and its padding").toBeLessThan(40);

  // Both pools' pages show the pair live, from the stream's 24-hour rows (read again every
  // 60 s, so at most a minute behind the API).
  await page.goto(`/pools/${after.cluster}/b200-on-demand`);
  await expect(page.getByTestId("pool-fallback")).toContainText("Stands in for b200-spot-burst. Last 24 h:");
  await expect(page.getByTestId("pool-fallback")).toContainText(
    "Keep the 2 on-demand nodes: spot pool b200-spot-burst is short",
    { timeout: 70_000 },
  );
  await page.goto(`/pools/${after.cluster}/b200-spot-burst`);
  await expect(page.getByTestId("pool-fallback")).toContainText("b200-on-demand stands in for this pool.");
});

test("a namespace's showback row on /savings is the API's, and the rows add up to the total", async ({ page, request }) => {
  // The pod recorder looks every 15 s: wait until training pods have run at a price.
  await expect
    .poll(
      async () => {
        const r = await (await request.get("/api/v1/showback?range=1h")).json();
        return r.rows.some((x: { key: string; cost_usd: string }) => x.key === "ml-training" && Number(x.cost_usd) > 0);
      },
      { timeout: 60_000 },
    )
    .toBe(true);
  const to = new Date(Date.now() - 1000);
  const from = new Date(to.getTime() - 3600_000);
  const q = `from=${from.toISOString()}&to=${to.toISOString()}`;
  const r = await (await request.get(`/api/v1/showback?${q}`)).json();
  const row = r.rows.find((x: { key: string }) => x.key === "ml-training");
  const cents = (v: string) => Math.round(Number(v) * 100);
  const parts = [...r.rows, ...r.idle].reduce((s: number, x: { cost_usd: string }) => s + cents(x.cost_usd), 0);
  expect(parts).toBe(cents(r.total.cost_usd));

  await page.goto(`/savings?${q}`);
  const tr = page.locator('tr[data-showback-key="ml-training"]');
  await expect(tr.locator('[data-col="cost"]')).toHaveText(usd(row.cost_usd));
  await expect(tr.locator('[data-col="on-demand"]')).toHaveText(usd(row.on_demand_usd));
  await expect(tr.locator('[data-col="savings"]')).toHaveText(usd(row.savings_usd));
  await expect(page.getByTestId("showback-total").locator('[data-col="cost"]')).toHaveText(usd(r.total.cost_usd));
  await expect(page.locator("tr[data-idle-pool]").first()).toBeVisible();
  // One line per row.
  expect((await tr.boundingBox())!.height).toBeLessThan(40);

  // By team: the embedded workloads' `team` label.
  await page.getByRole("link", { name: "by team" }).click();
  await expect(page.getByTestId("showback")).toHaveAttribute("data-by", "team");
  await expect(page.locator('tr[data-showback-key="research"]')).toBeVisible();
});

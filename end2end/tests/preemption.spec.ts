import { expect, test } from "@playwright/test";
import { expectRemovedCard, kubectl, poolDetail, pools } from "./helpers";

test("a spot preemption plays on the pool page: cordon, drain, removal", async ({ page, request }) => {
  const candidates = (await pools(request)).filter((p) => p.compute_class === "spot" && (p.current_nodes ?? 0) > 0);
  expect(candidates.length, "a spot pool with nodes").toBeGreaterThan(0);
  const pool = candidates[0];
  const detail = await poolDetail(request, pool.cluster, pool.name);
  const node = detail.nodes.find((n) => !n.pending_preemption);
  expect(node, "a node not already being preempted").toBeTruthy();

  await page.goto(`/pools/${pool.cluster}/${pool.name}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  const row = page.locator(`tr[data-node="${node!.name}"]`);
  await expect(row).toBeVisible();

  kubectl(pool.cluster, ["annotate", "node", node!.name, "sim.spotboard.dev/preempt=now"]);
  // T=0: cordoned and pending-preemption, live.
  await expect(row.locator("td[data-preemption]")).toHaveAttribute("data-preemption", "pending", { timeout: 5_000 });
  // The header tells every page that a preemption is under way.
  await expect(page.getByTestId("preempting-now")).toBeVisible();
  await expect(page.getByTestId("preempting-now")).toContainText("preempting");
  await expect(row).toContainText("cordoned");
  await expect(page.getByTestId("events")).toContainText("Preemption pending");
  // T+2 min (2 s at speed 60): evicted-at, drain.
  await expect(row.locator("td[data-preemption]")).toHaveAttribute("data-preemption", "draining", { timeout: 15_000 });
  await expect(page.getByTestId("events")).toContainText("Preemption in progress");
  // By T+7 min (7 s): the node is gone from the pool.
  await expect(row).toHaveCount(0, { timeout: 20_000 });
  await expect(page.getByTestId("events")).toContainText("Deleted for preemption");
});

test("a preemption's countdown walks through the phases to removed, with its blast radius", async ({ page, request }) => {
  const spot = (await pools(request)).filter((p) => p.compute_class === "spot" && (p.current_nodes ?? 0) > 0);
  const pool = spot[spot.length - 1];
  const detail = await poolDetail(request, pool.cluster, pool.name);
  const node = detail.nodes.find((n) => !n.pending_preemption && !n.cordoned);
  expect(node, "a node not being preempted").toBeTruthy();

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  kubectl(pool.cluster, ["annotate", "node", node!.name, "sim.spotboard.dev/preempt=now"]);

  const card = page.locator(`[data-testid="preemption"][data-node="${node!.name}"]`);
  await expect(card).toBeVisible({ timeout: 10_000 });
  await expect(card.getByTestId("phase")).toHaveText("notice");
  // The charming timeline, drawn by ECharts from our own origin.
  await expect(page.locator("#preemption-chart canvas")).toBeVisible();
  await expect(card.getByTestId("countdown")).toContainText("draining in");
  // The blast radius: the node's pods with their grace-period fit.
  const blast = card.getByTestId("blast-radius");
  await expect(blast.locator("tbody tr").first()).toBeVisible({ timeout: 10_000 });
  await expect(blast).toContainText("T+2:00");
  // At speed 60: draining at T+2 s, removed by T+7 s.
  await expect(card.getByTestId("phase")).toHaveText("draining", { timeout: 15_000 });
  await expect(card.getByTestId("countdown")).toContainText("removed in");
  await expectRemovedCard(page, card, 20_000);
  await expect(card.getByTestId("countdown")).toContainText("removed at T+");
  // The ledger's signals include the pool: its rate in a Spot Advisor band, then, once the
  // replacement node is Ready (CKS replaces after removal), its replacement latency.
  const signals = page.getByTestId("signals");
  const row = signals.locator(`tr[data-key="${pool.cluster}/${pool.name}"]`);
  await expect(row).toBeVisible({ timeout: 10_000 });
  await expect(row.locator("td[data-latency] .latency").first()).toHaveText(/^\d+ s$/, { timeout: 45_000 });
  // The flag (`--rate-alert-pct`, 10 % by default): a key still running spot nodes whose rate
  // is above 10 % in a window. This pool's input is known: the node preempted above (and any
  // the simulation preempted) over the pool's few spot nodes (2 to 6 at the start, plus one
  // replacement per preemption), which is at least 1 of 7, 14 %; its replacement is running.
  // So it is flagged, in its 24 h window, the first of the three.
  const counts = (text: string) => {
    const m = /\((\d+) of (\d+)\)/.exec(text);
    if (!m) throw new Error(`a rate cell reads "… (P of N)": "${text}"`);
    return { preemptions: Number(m[1]), spotNodes: Number(m[2]) };
  };
  const day = counts(await row.locator("td").first().innerText());
  expect(day.preemptions, "the preemption made above is in the 24 h rate").toBeGreaterThanOrEqual(1);
  expect(day.spotNodes, "a pool of a few spot nodes").toBeLessThanOrEqual(9);
  const flag = row.locator("td[data-flag]");
  await expect(flag).toHaveCount(1);
  await expect(flag).toContainText("above 10 % (24h window)");
  await expect(flag.getByRole("link", { name: "Capacity Finder" })).toHaveAttribute("href", "/capacity-finder");
  // And a key with no preemption in any window is not flagged, whatever it runs.
  const lines = await signals.locator("tbody tr[data-row]").evaluateAll((trs) =>
    trs.map((tr) => ({
      key: tr.getAttribute("data-key"),
      rates: [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent ?? ""),
      flagged: tr.querySelector("td[data-flag]") !== null,
    })),
  );
  const quiet = lines.filter((l) => l.rates.every((t) => /\(0 of \d+\)/.test(t)));
  console.log(`signals: ${lines.length} pools, ${quiet.length} without a preemption`);
  for (const l of quiet) expect(l.flagged, `${l.key}: ${l.rates.join(" / ")}`).toBe(false);
  // The server judged the same row the same way.
  const rates = (await (await request.get("/api/v1/preemptions")).json()).rates as Array<Record<string, unknown>>;
  expect(rates.some((r) => r.by === "pool" && r.key === `${pool.cluster}/${pool.name}` && r.alert === true)).toBe(true);
  // One dimension at a time: by zone, the rows are zones and the pools are gone.
  await page.locator('select[name="rates-by"]').selectOption("zone");
  await expect(signals.locator("thead th").first()).toHaveText("zone");
  await expect(signals).not.toContainText(`${pool.cluster}/${pool.name}`);
  await expect(signals.locator(`tr[data-key="${pool.zone}"]`)).toHaveCount(1);
});

test("a drain refused by a PodDisruptionBudget shows on its card, linked to the finding that predicted it", async ({ page, request }) => {
  // Room for the audit's return below (40 s at most) besides the preemption's own waits.
  test.setTimeout(120_000);
  // The embedded CKS zone's vllm-mistral-7b has a budget of maxUnavailable 1 and four pods per node.
  const pool = (await pools(request)).find((p) => p.name === "l40s-spot-inference" && (p.current_nodes ?? 0) > 0);
  expect(pool, "the l40s-spot-inference pool with nodes").toBeTruthy();
  const detail = await poolDetail(request, pool!.cluster, pool!.name);
  const node = detail.nodes.find((n) => !n.pending_preemption && !n.cordoned);
  expect(node, "a node not being preempted").toBeTruthy();

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  kubectl(pool!.cluster, ["annotate", "node", node!.name, "sim.spotboard.dev/preempt=now"]);
  const card = page.locator(`[data-testid="preemption"][data-node="${node!.name}"]`);
  const errors = card.getByTestId("eviction-errors");
  // The drain starts at T+2 min (2 s): the refusals arrive as events, live.
  const refused = errors.locator('li[data-kind="refused"]');
  await expect(refused.first()).toBeVisible({ timeout: 15_000 });
  await expect(refused.first()).toContainText("CWNodeDrainingPDBViolation");
  await expect(refused.first()).toContainText("inference/vllm-mistral-7b");
  // The eviction errors are an alert: in the header on every page, and listed here.
  await expect(page.getByTestId("alerts-firing")).toBeVisible({ timeout: 10_000 });
  await expect(page.getByTestId("alerts-firing")).toContainText("firing");
  await expect(
    page.getByTestId("alerts").locator(`li[data-alert="eviction-errors/${pool!.cluster}/${pool!.name}"]`),
  ).toContainText("eviction errors");
  // Removed at T+7 min: the refused pods were killed with the node.
  await expectRemovedCard(page, card, 20_000);
  const killed = errors.locator('li[data-kind="killed"]');
  await expect(killed.first()).toBeVisible({ timeout: 15_000 });
  const refusedPods = await refused.locator("strong").allTextContents();
  const killedPods = await killed.locator("strong").allTextContents();
  for (const p of refusedPods) expect(killedPods).toContain(p);
  await expect(card.getByTestId("eviction-summary")).toHaveText(`${refusedPods.length} refused · ${killedPods.length} killed`);

  // The link goes to the pool's readiness audit, where the budget's finding is.
  const link = refused.first().locator('a[data-finding="PdbBlocksDrain"]');
  await expect(link).toContainText("readiness check: PodDisruptionBudget blocks a drain");
  const target = (await link.getAttribute("href"))!;
  // The simulation preempts other nodes meanwhile, and their cards join the nodes under
  // notice, listed above the removed ones: this card moves down each time, and a click aimed
  // at the link's old box misses it (CI once saw the URL unchanged for 10 s). Retrying the
  // click, not the assertion, keeps the check that following the link reaches the finding.
  await expect(async () => {
    await link.click();
    await expect(page).toHaveURL(new RegExp(`${target}$`), { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  const audit = page.locator(target);
  // The pool's audit row goes while the pool has no pods (the simulation may have preempted
  // its other node meanwhile; CI saw both gone) and is back at the first audit (every 15 s)
  // after the replacements' pods run.
  await expect(audit).toHaveAttribute("data-pool", pool!.name, { timeout: 40_000 });
  await audit.evaluate((d) => ((d as HTMLDetailsElement).open = true));
  await expect(audit.locator('li[data-check="PdbBlocksDrain"]')).toContainText("PodDisruptionBudget vllm-mistral-7b allows 1 disruption(s)");

  // The ledger's 7-day row for the pool counts them, as the server computed it.
  const row = page.getByTestId("signals").locator(`tr[data-key="${pool!.cluster}/${pool!.name}"]`);
  await expect(row.locator("td.eviction-errors")).toContainText("refused", { timeout: 45_000 });
  const rates = (await (await request.get("/api/v1/preemptions")).json()).rates as Array<{ by: string; key: string; window: string; evictions: { refused: number; past_grace: number; killed: number } }>;
  const mine = rates.find((r) => r.by === "pool" && r.window === "7d" && r.key === `${pool!.cluster}/${pool!.name}`)!;
  expect(mine.evictions.refused).toBeGreaterThanOrEqual(refusedPods.length);
  await expect(row.locator("td.eviction-errors")).toHaveAttribute("data-evictions", /^[1-9]\d*$/);
});

import { expect, test } from "@playwright/test";
import { kubectl, poolDetail, pools } from "./helpers";

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
  await expect(card.getByTestId("phase")).toHaveText("removed", { timeout: 20_000 });
  await expect(card.getByTestId("countdown")).toContainText("removed at T+");
  // The ledger's signals include the pool: its rate in a Spot Advisor band, then, once the
  // replacement node is Ready (CKS replaces after removal), its replacement latency.
  const signals = page.getByTestId("signals");
  const row = signals.locator(`tr[data-key="${pool.cluster}/${pool.name}"]`);
  await expect(row).toBeVisible({ timeout: 10_000 });
  await expect(row.locator("td[data-latency] .latency").first()).toHaveText(/^\d+ s$/, { timeout: 45_000 });
  // The flag agrees with the server's judgement of the same row (`--rate-alert-pct`, 10 %).
  const rates = (await (await request.get("/api/v1/preemptions")).json()).rates as Array<Record<string, unknown>>;
  const flagged = rates.some((r) => r.by === "pool" && r.key === `${pool.cluster}/${pool.name}` && r.alert === true);
  await expect(row.locator("td[data-flag]")).toHaveCount(flagged ? 1 : 0);
  if (flagged) await expect(row.locator("td[data-flag]")).toContainText("Capacity Finder");
  // One dimension at a time: by zone, the rows are zones and the pools are gone.
  await page.locator('select[name="rates-by"]').selectOption("zone");
  await expect(signals.locator("thead th").first()).toHaveText("zone");
  await expect(signals).not.toContainText(`${pool.cluster}/${pool.name}`);
  await expect(signals.locator(`tr[data-key="${pool.zone}"]`)).toHaveCount(1);
});

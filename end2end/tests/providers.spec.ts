import { expect, test } from "@playwright/test";
import { TALL, expectRemovedCard, kubectl } from "./helpers";

const GKE = "spotboard-gke-us-central1-a";
const AWS = "spotboard-karpenter-us-east-1a";

test("GKE node pools and Karpenter NodePools sit beside CKS NodePools, with provider and capacity type", async ({ page }) => {
  await page.setViewportSize(TALL);
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  const l4 = page.locator(`tr[data-pool="spot-l4"][data-cluster="${GKE}"]`);
  await expect(l4.locator('td[data-col="provider"]')).toHaveText("gke");
  await expect(l4.locator('td[data-col="capacity"]')).toHaveText("spot");
  await expect(l4).toContainText("g2-standard-24");
  // No CoreWeave conditions: read from the nodes' labels, says the conditions cell.
  await expect(l4.locator('td[data-col="conditions"]')).toContainText("node labels");
  const general = page.locator(`tr[data-pool="spot-general"][data-cluster="${AWS}"]`);
  await expect(general.locator('td[data-col="provider"]')).toHaveText("karpenter");

  // Filter by provider: only Karpenter pools remain, and the filter is in the URL.
  await page.locator('select[name="provider"]').selectOption("karpenter");
  await expect(page).toHaveURL(/provider=karpenter/);
  await expect(general).toBeVisible();
  await expect(l4).toHaveCount(0);
  await expect(page.locator('td[data-col="provider"]').filter({ hasNotText: "karpenter" })).toHaveCount(0);
});

test("GPU allocation: a GKE L4 node shows its requested GPUs of its two, and the fleet its idle spot GPUs", async ({ page }) => {
  await page.goto(`/pools/${GKE}/spot-l4`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  const cells = page.getByTestId("nodes").locator('td[data-col="gpus"]');
  await expect(cells.first()).toBeVisible();
  // g2-standard-24: 2 × L4 (Compute Engine: G2), read from the node's capacity.
  for (const text of await cells.allInnerTexts()) expect(text).toMatch(/^[0-2] \/ 2$/);
  await expect(cells.first()).toHaveAttribute("title", /nvidia\.com\/gpu capacity/);
  // Without a Prometheus the page says these are requests, not measured use, and draws no
  // utilisation column (the API agrees: source "requests").
  await expect(page.getByTestId("gpu-source")).toContainText("requested by running pods, not measured use");
  await expect(page.getByTestId("nodes").locator('td[data-col="gpu-util"]')).toHaveCount(0);
  // Each node's cell is its row in /api/v1/allocation (read in turn: a preemption may move pods).
  await expect(async () => {
    const api = await (await page.request.get(`/api/v1/allocation?cluster=${GKE}&pool=spot-l4`)).json();
    expect([api.source, api.dcgm]).toEqual(["requests", null]);
    const rows = page.getByTestId("nodes").locator("tr[data-node]");
    const shown: Record<string, string> = {};
    for (const r of await rows.all()) {
      shown[(await r.getAttribute("data-node"))!] = (await r.locator('td[data-col="gpus"]').innerText()).trim();
    }
    const want: Record<string, string> = {};
    for (const n of api.nodes) want[n.node] = `${n.gpus_requested} / ${n.gpus_allocatable}`;
    expect(shown).toEqual(want);
    expect(api.pools[0].idle_gpus).toBe(api.nodes.reduce((s: number, n: { idle_gpus: number }) => s + n.idle_gpus, 0));
  }).toPass({ timeout: 20_000 });
  // The fleet's idle spot GPUs: "N of M", M at least the L4 pool's 6.
  await page.goto("/");
  const idle = page.getByTestId("fleet-idle-gpus");
  await expect(idle).toContainText("spot GPUs idle");
  const m = /(\d+) of (\d+)/.exec(await idle.locator(".value").innerText());
  expect(m, "N of M").not.toBeNull();
  expect(Number(m![2])).toBeGreaterThanOrEqual(6);
  expect(Number(m![1])).toBeLessThanOrEqual(Number(m![2]));
  // Their cost, at the pools' spot prices per GPU, beside what spot saves.
  await expect(page.getByTestId("idle-gpu-cost")).toHaveText(/^Idle spot GPUs cost \$[\d,]+\.\d\d\/h$/);
});

test("a Karpenter interruption plays its 2-minute window, with the blast radius and the readiness audit", async ({ page }) => {
  // The node that runs the worker (a random preemption may have moved it since the start).
  const node = kubectl(AWS, ["get", "pods", "-n", "web", "-l", "app=worker", "-o", "jsonpath={.items[0].spec.nodeName}"]).trim();
  expect(node).not.toBe("");
  // A link to the pool's audit: the page scrolls to its line (only the lines near the viewport
  // are drawn).
  await page.goto(`/preemptions#readiness-${AWS.replace(/[^A-Za-z0-9]/g, "-")}-gpu-spot`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  // The audit names the 300 s grace period that AWS's 120 s cannot honour, and why it matters.
  const audit = page.getByTestId("readiness");
  // Pools are collapsed to a line each; opening one shows its workloads.
  await expect(audit.locator('details[data-pool="gpu-spot"]')).toBeInViewport({ timeout: 20_000 });
  await audit.locator('details[data-pool="gpu-spot"] > summary').click();
  const worker = audit.locator('tr[data-pool="gpu-spot"][data-workload="web/ReplicaSet/worker-59c4"]');
  await expect(worker).toBeVisible();
  const finding = worker.locator('li[data-check="GraceExceedsNotice"]');
  await expect(finding).toContainText("120 s from SIGTERM to removal on karpenter");
  // Why it matters is said once, in the legend.
  await expect(audit.getByTestId("readiness-legend")).toContainText("SIGKILL");

  kubectl(AWS, ["annotate", "node", node, "sim.spotboard.dev/preempt=now"]);
  const card = page.locator(`[data-testid="preemption"][data-node="${node}"]`);
  await expect(card).toBeVisible({ timeout: 10_000 });
  await expect(card).toContainText("karpenter");
  await expect(card.getByTestId("phase")).toHaveText("draining");
  const blast = card.getByTestId("blast-radius");
  await expect(blast.locator("tbody tr").first()).toBeVisible({ timeout: 10_000 });
  await expect(blast).toContainText("PodDisruptionBudget");
  await expect(blast.locator("tbody")).toContainText("worker-59c4");
  await expect(blast.locator("tbody")).toContainText("SIGKILL risk");
  // At speed 60 the 2-minute warning takes 2 s: the node is reclaimed.
  await expectRemovedCard(page, card, 20_000);

  // The pool page shows the same timeline and the pool's own audit.
  await page.goto(`/pools/${AWS}/gpu-spot`);
  await expect(page.getByTestId("pool-preemptions").locator(`[data-node="${node}"]`)).toBeVisible({ timeout: 10_000 });
  await expect(page.locator("#pool-preemption-chart canvas")).toBeVisible();
  await expect(page.getByTestId("readiness")).toContainText("worker-59c4");
  // Karpenter's own NodePool fields, read from karpenter.sh/v1.
  await expect(page.locator("dl.spec")).toContainText("disruption.consolidationPolicy");

  // "Why did my pod stop?": the worker's pods, by name prefix, with how they ended. (Typing
  // before the page hydrates is create.spec's "what is typed before the page hydrates".)
  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  const lookup = page.getByTestId("pod-lookup");
  await lookup.getByLabel("Namespace").fill("web");
  await lookup.getByLabel("Pod name or prefix").fill("worker-59c4");
  await expect(async () => {
    await lookup.getByRole("button", { name: "Look up" }).click();
    const hit = lookup.locator("tbody tr").filter({ hasText: node });
    // Its grace period (300 s) outlived AWS's 2 minutes: still terminating when the instance
    // went, killed at removal.
    await expect(hit.locator('td[data-col="outcome"]')).toHaveText("terminating", { timeout: 1_000 });
  }).toPass({ timeout: 40_000 });
  // A name with a SQL wildcard is refused before anything is asked.
  await lookup.getByLabel("Pod name or prefix").fill("worker%");
  await lookup.getByRole("button", { name: "Look up" }).click();
  await expect(lookup.getByRole("alert")).toContainText("name:");
});

test("a Karpenter NodePool with no nodes still shows, with what it allows", async ({ page }) => {
  await page.goto("/?provider=karpenter");
  const idle = page.locator(`tr[data-pool="arm-spot"][data-cluster="${AWS}"]`);
  await expect(idle).toContainText("c7g.2xlarge, m7g.xlarge");
  await expect(idle.locator('td[data-col="current"]')).toHaveText("0");
  // Its Ready condition as a mark, named for screen readers.
  await expect(idle.locator('.cond[data-type="Ready"]')).toHaveAttribute("aria-label", /^Ready: True/);
});

test("Karpenter's refused launches show under the capacity grid and on the pool's page, live", async ({ page, request }) => {
  // The embedded Karpenter zone's own EC2 has no g5.2xlarge spot in us-east-1a: every
  // gpu-spot launch is refused there first (InsufficientCapacityError on its NodeClaim).
  await page.goto("/capacity");
  await expect(page.getByTestId("conn")).toHaveText("live");
  const row = page.locator(`tr[data-launch-failure="${AWS}/us-east-1a/g5.2xlarge"]`);
  await expect(row).toContainText("gpu-spot");
  await expect(row).toContainText("InsufficientInstanceCapacity");
  // The page's count is the API's (read before and after: a random preemption may add one).
  const count = async () => {
    const grid = await (await request.get("/api/v1/capacity")).json();
    return grid.launch_failures.find((r: { zone: string; instance_type: string }) =>
      r.zone === "us-east-1a" && r.instance_type === "g5.2xlarge").failures_24h as number;
  };
  const before = await count();
  const shown = Number(await row.locator('td[data-col="24h"]').textContent());
  expect(shown).toBeGreaterThanOrEqual(before);
  expect(shown).toBeLessThanOrEqual(await count());
  expect(before).toBeGreaterThanOrEqual(2);
  // One line per row: the provider's long error is cut to its column, whole on hover.
  const heights = await row.locator("td").evaluateAll((tds) => tds.map((td) => td.getBoundingClientRect().height));
  expect(Math.max(...heights) - Math.min(...heights)).toBeLessThan(2);

  // A new refusal arrives without a reload: a preempted gpu-spot node is replaced.
  const node = kubectl(AWS, ["get", "nodes", "-l", "karpenter.sh/nodepool=gpu-spot", "-o", "jsonpath={.items[0].metadata.name}"]).trim();
  kubectl(AWS, ["annotate", "node", node, "sim.spotboard.dev/preempt=now", "--overwrite"]);
  await expect(async () => {
    const now = Number(await row.locator('td[data-col="24h"]').textContent());
    expect(now).toBeGreaterThan(shown);
  }).toPass({ timeout: 20_000 });

  await page.goto(`/pools/${AWS}/gpu-spot`);
  await expect(page.getByTestId("pool-launch-failures")).toContainText(
    "Karpenter could not launch g5.2xlarge in us-east-1a",
  );
});

test("a Karpenter consolidation is no preemption: /preemptions shows it beside the rate, the ledger says why", async ({ page, request }) => {
  // A spot-general node under no notice: Karpenter consolidates it (the zone's own rules).
  const nodes = JSON.parse(kubectl(AWS, ["get", "nodes", "-l", "karpenter.sh/nodepool=spot-general", "-o", "json"]));
  const node = nodes.items
    .find((n: { spec: { taints?: { key: string }[] } }) => !(n.spec.taints ?? []).some((t) => t.key === "karpenter.sh/disrupted"))
    .metadata.name as string;
  kubectl(AWS, ["annotate", "node", node, "sim.spotboard.dev/disrupt=Underutilized", "--overwrite"]);
  await expect.poll(async () => {
    const rows = await (await request.get("/api/v1/ledger?range=24h")).json();
    const row = rows.find((r: { node: string; ended_at: string | null }) => r.node === node && r.ended_at);
    return row ? `${row.end_reason}: ${row.end_evidence}` : "running";
  }, { timeout: 60_000 }).toBe("consolidated: Karpenter DisruptionTerminating: Disrupting Node: Underutilized/Replace");

  await page.goto("/preemptions");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.locator('select[name="rates-by"]').selectOption("pool");
  const row = page.getByTestId("signals").locator(`tr[data-key="${AWS}/spot-general"]`);
  await expect(row.locator("td.departures")).toContainText("consolidated", { timeout: 30_000 });
});

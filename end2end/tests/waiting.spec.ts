import { expect, test } from "@playwright/test";
import { TALL, kubectl } from "./helpers";

const CKS = "spotboard-us-east-04a";
const POOL = "h100-spot-train";

type Row = { cluster: string; pool: string | null; pods: number; gpus: number; cause: string };

test("a pod created with kubectl that its pool cannot take shows on the pool page and on / live, and leaves when deleted", async ({ page, request }) => {
  const name = `e2e-wait-${Date.now() % 100000}`;
  await page.goto(`/pools/${CKS}/${POOL}`);
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.evaluate(() => ((window as any).__noReload = true));

  // 64 GPUs: more than any node of the pool has, so the scheduler reports it Unschedulable.
  kubectl(CKS, ["apply", "-f", "-"], `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: default
spec:
  nodeSelector:
    compute.coreweave.com/node-pool: ${POOL}
  containers:
  - name: main
    image: registry.example/train:1
    resources:
      requests: {nvidia.com/gpu: "64"}
      limits: {nvidia.com/gpu: "64"}
`);
  const section = page.getByTestId("pool-waiting");
  await expect(section).toBeVisible({ timeout: 5_000 });
  // The section says what /api/v1/waiting says of the pool (read in turn: the fleet moves).
  await expect(async () => {
    const api = await (await request.get(`/api/v1/waiting?cluster=${CKS}`)).json();
    expect(api.pods.some((p: { name: string; pools: string[] }) => p.name === name && p.pools.includes(POOL))).toBe(true);
    const row: Row = api.pools.find((r: Row) => r.pool === POOL);
    const text = await section.locator("p").first().innerText();
    expect(text).toContain(`${row.pods} pod${row.pods === 1 ? "" : "s"} (${row.gpus} GPUs)`);
    expect(text).toContain(row.cause);
    expect(row.gpus).toBeGreaterThanOrEqual(64);
  }).toPass({ timeout: 10_000 });
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);

  // Tall enough to draw every row: the pool's row leaves the top of the waiting sort once its
  // pod is deleted, and its cell is read after that.
  await page.setViewportSize(TALL);
  // The fleet figure on / counts it.
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect
    .poll(async () => Number(await page.getByTestId("fleet-waiting").locator(".value").innerText()), { timeout: 5_000 })
    .toBeGreaterThanOrEqual(1);
  // The pools table's Waiting column says it of the pool: pods (GPUs) and the longest wait,
  // the cause in its title, as the API gives them.
  const cell = page.locator(`tr[data-cluster="${CKS}"][data-pool="${POOL}"] td[data-col="waiting"]`);
  await expect(async () => {
    const api = await (await request.get(`/api/v1/waiting?cluster=${CKS}`)).json();
    const row: Row = api.pools.find((r: Row) => r.pool === POOL);
    expect(await cell.innerText()).toMatch(new RegExp(`^${row.pods} \\(${row.gpus} GPU\\) \\d+[smhd]$`));
    expect(await cell.getAttribute("title")).toContain(row.cause);
  }).toPass({ timeout: 10_000 });
  // Sorted by waiting work, descending, the pool with the most waiting GPUs (this pod's 64)
  // comes first, and the sort is in the URL.
  const sortButton = page.locator('th[data-col="waiting"] button.sort');
  await sortButton.click();
  await sortButton.click();
  await expect(page).toHaveURL(/sort=waiting&desc=1/);
  await expect(page.locator('th[data-col="waiting"]')).toHaveAttribute("aria-sort", "descending");
  const first = page.locator("table.pools tbody tr[data-pool]").first();
  await expect(first).toHaveAttribute("data-pool", POOL);
  await expect(first).toHaveAttribute("data-cluster", CKS);

  kubectl(CKS, ["delete", "pod", name, "-n", "default", "--wait=false"]);
  await expect
    .poll(
      async () => {
        const api = await (await request.get(`/api/v1/waiting?cluster=${CKS}`)).json();
        return api.pods.some((p: { name: string }) => p.name === name);
      },
      { timeout: 5_000 },
    )
    .toBe(false);
  // And the pool's cell follows: "—" once nothing waits for it, else what still waits (a
  // preempted node's pods may, for a moment).
  await expect(async () => {
    const api = await (await request.get(`/api/v1/waiting?cluster=${CKS}`)).json();
    const row: Row | undefined = api.pools.find((r: Row) => r.pool === POOL);
    const text = await cell.innerText();
    if (row) expect(text).toMatch(new RegExp(`^${row.pods} `));
    else expect(text).toBe("—");
  }).toPass({ timeout: 5_000 });
});

test("Kueue queues on / show pending and admitted work by capacity type, and a Workload created with kubectl moves them live", async ({ page, request }) => {
  const name = `e2e-kueue-${Date.now() % 100000}`;
  await page.goto("/");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.evaluate(() => ((window as any).__noReload = true));
  const line = page.getByTestId("kueue").locator('tr[data-queue="ml-training"]');
  await expect(line).toBeVisible({ timeout: 10_000 });
  // The line says what /api/v1/kueue says of the queue.
  await expect(async () => {
    const api = await (await request.get(`/api/v1/kueue?cluster=${CKS}`)).json();
    const q = api.queues.find((q: { name: string }) => q.name === "ml-training");
    expect(await line.locator('[data-col="spot"]').innerText()).toBe(`${q.admitted_spot} (${q.admitted_gpus_spot} GPU)`);
    expect(await line.locator('[data-col="on-demand"]').innerText()).toBe(`${q.admitted_on_demand} (${q.admitted_gpus_on_demand} GPU)`);
    expect(await line.locator('[data-col="pending"]').innerText()).toBe(`${q.pending_workloads} (${q.pending_gpus} GPU)`);
    expect(q.admitted_gpus_spot).toBe(32);
  }).toPass({ timeout: 10_000 });
  // Each flavor names the pool it lands on.
  await expect(line.locator("td.flavors .flavor").first()).toHaveText("h100-spot (spot)");
  await expect(line.locator("td.flavors .flavor").first()).toHaveAttribute("title", /lands on h100-spot-train/);
  await expect(line.locator("td.note")).toContainText("insufficient unused quota for nvidia.com/gpu in flavor h100-spot");
  const before = await line.locator('[data-col="pending"]').innerText();
  const [pendingBefore, gpusBefore] = before.match(/\d+/g)!.map(Number);

  // 8 GPUs: spot is full and on-demand has 4 left, so Kueue leaves it pending.
  kubectl(CKS, ["apply", "-f", "-"], `apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: ${name}
  namespace: ml-training
spec:
  queueName: team-a
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: main
          image: registry.example/train:1
          resources:
            limits: {nvidia.com/gpu: "8"}
`);
  await expect(line.locator('[data-col="pending"]')).toHaveText(`${pendingBefore + 1} (${gpusBefore + 8} GPU)`, { timeout: 10_000 });
  kubectl(CKS, ["delete", "workload", "-n", "ml-training", name]);
  await expect(line.locator('[data-col="pending"]')).toHaveText(before, { timeout: 10_000 });
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);

  // The pool the spot flavor lands on says so on its page.
  await page.goto(`/pools/${CKS}/h100-spot-train`);
  await expect(page.getByTestId("pool-kueue")).toContainText(
    "ClusterQueue ml-training admits into flavor h100-spot (spot) here: 32 of 32 GPUs admitted.",
  );
});

import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";

/** A window tall enough that the pools table draws every row of a page of 100 (it draws only
 * the rows near the viewport): for tests that read rows wherever they are in the table. */
export const TALL = { width: 1280, height: 4000 };

const cacheDir = mkdtempSync(join(tmpdir(), "spotboard-kubectl-"));

/** Runs kubectl against the embedded cluster (its kubeconfig path comes from the test task). */
export function kubectl(context: string, args: string[], input?: string): string {
  const kubeconfig = process.env.SPOTBOARD_EMBEDDED_KUBECONFIG;
  if (!kubeconfig) throw new Error("SPOTBOARD_EMBEDDED_KUBECONFIG is not set: run through ./tasks.sh e2e");
  return execFileSync("kubectl", ["--kubeconfig", kubeconfig, "--context", context, "--cache-dir", cacheDir, ...args], {
    input,
    encoding: "utf8",
    timeout: 30_000,
  });
}

export type Pool = {
  key: string;
  cluster: string;
  zone: string | null;
  name: string;
  compute_class: string;
  instance_type: string;
  target_nodes: number;
  current_nodes: number | null;
  conditions: { type: string; status: string; reason: string }[];
};

export type Node = { key: string; name: string; pool: string | null; cordoned: boolean; pending_preemption: boolean };

export async function pools(request: APIRequestContext): Promise<Pool[]> {
  const r = await request.get("/api/v1/pools");
  if (!r.ok()) throw new Error(`GET /api/v1/pools: ${r.status()}`);
  return (await r.json()).pools;
}

export async function poolDetail(request: APIRequestContext, cluster: string, name: string) {
  const r = await request.get(`/api/v1/pools/${encodeURIComponent(cluster)}/${encodeURIComponent(name)}`);
  if (!r.ok()) throw new Error(`GET pool ${cluster}/${name}: ${r.status()}`);
  return (await r.json()) as { pool: Pool; nodes: Node[]; events: { reason: string; object: string }[] };
}

/** A node of `pool` that is neither under notice nor cordoned (a test fails without one). */
export async function nodeToPreempt(request: APIRequestContext, pool: Pool): Promise<Node> {
  const detail = await poolDetail(request, pool.cluster, pool.name);
  const node = detail.nodes.find((n) => !n.pending_preemption && !n.cordoned);
  if (!node) throw new Error(`no node of ${pool.cluster}/${pool.name} is free to preempt`);
  return node;
}

/**
 * Waits until `card` says `phase`, scrolling the cards' box to its end meanwhile: the box draws
 * only the cards near its viewport, and a removed node's card moves to the end of the removed
 * cards (the newest removal last).
 */
export async function expectRemovedCard(page: Page, card: Locator, timeout: number): Promise<void> {
  await expect(async () => {
    await page.locator("#preemption-cards").evaluate((box) => box.scrollTo(0, box.scrollHeight));
    await expect(card.getByTestId("phase")).toHaveText("removed", { timeout: 1_000 });
  }).toPass({ timeout });
}

import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { APIRequestContext } from "@playwright/test";

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

import type { FullConfig } from "@playwright/test";

// tasks.sh starts the server and the tests together: wait until every watch has listed.
export default async function globalSetup(config: FullConfig) {
  const base = config.projects[0].use.baseURL ?? "http://127.0.0.1:3000";
  const deadline = Date.now() + 180_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${base}/readyz`);
      if (r.ok) return;
      last = `${r.status} ${await r.text()}`;
    } catch (e) {
      last = String(e);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`spotboard did not become ready at ${base}: ${last}`);
}

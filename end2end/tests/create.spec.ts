import { expect, type Page, test } from "@playwright/test";
import { pools } from "./helpers";

test("fill the form, the YAML follows, dry run, create, and the pool appears live", async ({ page, request }) => {
  const name = `e2e-create-${Date.now() % 100000}`;
  await page.goto("/pools/new");
  await expect(page.getByTestId("conn")).toHaveText("live");

  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("instanceType").selectOption("gd-8xa100-i128");
  await page.getByLabel("targetNodes", { exact: true }).fill("1");
  await page.getByLabel("nodeLabels").fill("team=ml");

  const yaml = page.getByLabel("NodePool YAML");
  await expect(yaml).toHaveValue(new RegExp(`name: ${name}`));
  await expect(yaml).toHaveValue(/computeClass: spot/);
  await expect(yaml).toHaveValue(/instanceType: gd-8xa100-i128/);
  await expect(yaml).toHaveValue(/team: ml/);
  // The catalog's A100 spot price, 9.65 USD per instance-hour, for one node.
  await expect(page.getByTestId("spot-target")).toContainText("$9.65/h");

  // Editing the YAML edits the form.
  const text = await yaml.inputValue();
  await yaml.fill(text.replace("team: ml", "team: research"));
  await expect(page.getByLabel("nodeLabels")).toHaveValue("team=research\n");
  await yaml.fill(text.replace("targetNodes: 1", "targetNodes: [oops"));
  await expect(page.getByTestId("yaml-error")).toContainText("line");
  await yaml.fill(text.replace("team: ml", "team: research"));
  await expect(page.getByTestId("yaml-error")).toBeEmpty();

  const create = page.getByRole("button", { name: "Create", exact: true });
  await expect(create).toBeDisabled();
  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page.getByTestId("verdict")).toContainText("Dry run: accepted");
  expect((await pools(request)).some((p) => p.name === name)).toBe(false);

  await create.click();
  await expect(page).toHaveURL(new RegExp(`/pools/[^/]+/${name}$`));
  await expect(page.getByRole("heading", { name })).toBeVisible();
  await expect(page.locator('.cond[data-type="Validated"]').first()).toContainText("Valid", { timeout: 15_000 });
  const created = (await pools(request)).find((p) => p.name === name);
  expect(created?.instance_type).toBe("gd-8xa100-i128");
});

test("the form opens without errors; a field's messages wait until it is touched", async ({ page }) => {
  await page.goto("/pools/new");
  await expect(page.getByTestId("conn")).toHaveText("live");
  const name = page.getByLabel("Name", { exact: true });
  // Nothing typed yet: no message and no red border, though name and instanceType are empty.
  await expect(page.locator(".field-errors li")).toHaveCount(0);
  await expect(page.locator('[aria-invalid="true"]')).toHaveCount(0);
  // Leaving the empty name touches it: its message shows, instanceType's still waits.
  await name.focus();
  await name.blur();
  await expect(page.locator('[data-field="metadata.name"]')).toContainText("required");
  await expect(name).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator('[data-field="spec.instanceType"] li')).toHaveCount(0);
  // A submit attempt shows every message and sends nothing.
  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page.locator('[data-field="spec.instanceType"]')).toContainText("required");
  await expect(page.getByTestId("verdict")).toHaveCount(0);
});

test("bad input shows the right messages and creates nothing", async ({ page, request }) => {
  await page.goto("/pools/new?instanceType=gb200-4x&targetNodes=1");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.getByLabel("Name", { exact: true }).fill("Bad_Name");
  await page.getByLabel("nodeLabels").fill("qos.coreweave.cloud/interruptable=true");

  // Typed in: their messages show at once.
  await expect(page.locator('[data-field="metadata.name"]')).toContainText("DNS-1123 subdomain");
  await expect(page.locator('[data-field="spec.nodeLabels"]')).toContainText("reserved");
  // The Superchip type came from the link, untouched: its message waits for a submit attempt.
  await expect(page.locator('[data-field="spec.computeClass"] li')).toHaveCount(0);
  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page.locator('[data-field="spec.computeClass"]')).toContainText("Superchip");
  await expect(page.getByTestId("verdict")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Create", exact: true })).toBeDisabled();
  expect((await pools(request)).some((p) => p.name === "Bad_Name")).toBe(false);
});

test("a foreign Origin cannot drive the create server function", async ({ request }) => {
  const r = await request.post("/api/submit_pool", {
    headers: { Origin: "http://evil.example" },
    data: { draft: { cluster: "x", name: "evil", spec: { instanceType: "turin-gp", targetNodes: 1 } }, mode: "create", confirm: null },
  });
  expect(r.status()).toBe(403);
});

// The server renders every form, so a person can type while the wasm is still loading.
// Hydration then sets each field from the form's state; what was typed must survive it and
// reach that state. The wasm is held back until the typing is done.
async function holdWasm(page: Page): Promise<() => void> {
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  await page.route(/\/pkg\/.*\.wasm$/, async (route) => {
    await gate;
    await route.continue();
  });
  return release;
}

test("what is typed before the page hydrates is kept", async ({ page }) => {
  const name = `e2e-early-${Date.now() % 100000}`;
  let release = await holdWasm(page);
  await page.goto("/pools/new?instanceType=gd-8xa100-i128&targetNodes=2", { waitUntil: "domcontentloaded" });
  await expect(page.getByTestId("conn")).not.toHaveText("live");
  // The server's page already shows the values the query asked for.
  const target = page.getByLabel("targetNodes", { exact: true });
  await expect(target).toHaveValue("2");
  await page.getByLabel("Name", { exact: true }).fill(name);
  await target.fill("3");
  await expect(page.getByTestId("conn")).not.toHaveText("live");
  release();
  await expect(page.getByTestId("conn")).toHaveText("live");
  await expect(page.getByLabel("Name", { exact: true })).toHaveValue(name);
  await expect(target).toHaveValue("3");
  const yaml = page.getByLabel("NodePool YAML");
  await expect(yaml).toHaveValue(new RegExp(`name: ${name}`));
  await expect(yaml).toHaveValue(/targetNodes: 3/);
  await expect(yaml).toHaveValue(/instanceType: gd-8xa100-i128/);

  // The pod lookup on /preemptions, a lazy route: its inputs are required, so a lookup whose
  // text was lost would not even be sent.
  await page.unrouteAll();
  release = await holdWasm(page);
  await page.goto("/preemptions", { waitUntil: "domcontentloaded" });
  const lookup = page.getByTestId("pod-lookup");
  await lookup.getByLabel("Namespace").fill("nowhere");
  await lookup.getByLabel("Pod name or prefix").fill("no-such-pod");
  await expect(page.getByTestId("conn")).not.toHaveText("live");
  release();
  await expect(page.getByTestId("conn")).toHaveText("live");
  await lookup.getByRole("button", { name: "Look up" }).click();
  await expect(lookup.getByRole("status")).toContainText("No preemption hit nowhere/no-such-pod");
});

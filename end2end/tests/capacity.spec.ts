import { expect, test } from "@playwright/test";

test("the capacity grid shows each zone's spot picture", async ({ page }) => {
  await page.goto("/capacity");
  const grid = page.getByTestId("capacity-grid");
  await expect(page.getByTestId("conn")).toHaveText("live");
  for (const zone of ["US-EAST-04A", "US-CENTRAL-07A", "EU-SOUTH-04A"]) {
    await expect(grid.locator("thead th", { hasText: zone })).toHaveCount(1);
  }
  // The embedded scenario: B200 spot waits for capacity in US-CENTRAL-07A.
  const b200 = grid.locator('tr[data-type="b200-8x"] td[data-zone="US-CENTRAL-07A"]');
  await expect(b200).toContainText("QueuedAwaitingCapacity");
  // The feed's free nodes appear once the feeds have been read.
  await expect(grid.locator('tr[data-type="b300-8x"] td[data-zone="US-EAST-04A"] [data-testid="free"]')).toContainText("free", {
    timeout: 20_000,
  });
  await expect(page.getByText("Spot Advisor bands")).toBeVisible();
});

test("pick a type and a count: the best zone ranks first and Create here pre-fills the form", async ({ page }) => {
  await page.goto("/capacity-finder");
  await expect(page.getByTestId("conn")).toHaveText("live");
  await page.getByLabel("Instance type").selectOption("b300-8x");
  await expect(page).toHaveURL(/instanceType=b300-8x/);
  await page.getByLabel("Nodes").fill("8");
  await page.getByLabel("Nodes").press("Enter");
  await page.getByLabel("Nodes").blur();
  await expect(page).toHaveURL(/count=8/);

  const rows = page.getByTestId("finder-results").locator("tbody tr");
  await expect(rows).toHaveCount(3);
  // The scenario's showcase: plenty of B300 spot in US-EAST-04A, next to none elsewhere.
  await expect(rows.first()).toHaveAttribute("data-zone", "US-EAST-04A");
  await expect(rows.first().locator('[data-part="availability"]')).toContainText("100 %");
  // The chart is drawn by ECharts served from our own origin.
  await expect(page.locator("#finder-chart canvas")).toBeVisible();
  // The URL holds the inputs: a reload keeps them.
  await page.reload();
  await expect(page.getByLabel("Nodes")).toHaveValue("8");

  await rows.first().getByRole("link", { name: "Create Spot Node Pool here" }).click();
  await expect(page).toHaveURL(/\/pools\/new\?/);
  await expect(page.getByLabel("instanceType")).toHaveValue("b300-8x");
  await expect(page.getByLabel("targetNodes", { exact: true })).toHaveValue("8");
  await expect(page.getByLabel("Cluster (zone)")).toHaveValue("spotboard-us-east-04a");
  await expect(page.getByLabel("NodePool YAML")).toHaveValue(/computeClass: spot/);

  // Client-side navigation back to the dashboard loads its snapshot too.
  await page.getByRole("navigation").getByRole("link", { name: "Node Pools" }).click();
  await expect(page.locator("tr[data-pool]").first()).toBeVisible();
});

test("Superchips are listed as not eligible", async ({ page }) => {
  await page.goto("/capacity-finder?instanceType=gb200-4x&count=1");
  await expect(page.getByTestId("not-eligible")).toContainText("Superchip");
  await expect(page.locator('option[value="gb200-4x"]')).toHaveAttribute("disabled", "");
  await expect(page.locator('option[value="gb200-4x"]')).toContainText("not eligible, Superchip");
});

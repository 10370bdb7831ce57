/**
 * The overview's busiest concurrency keys in a real headless Chromium (as test/browser/console.test.ts:
 * Debian's `chromium` driven by playwright-core, skipped without one). A node holds keyed jobs open with a
 * gate, so two keys sit at their limit with jobs waiting behind them; the operator sees the keys' summary
 * and the table ordered by running, then waiting, with the limit and an "at limit" mark, under the page's
 * Content-Security-Policy. With PAWL_UPDATE_SCREENSHOTS=1 the screenshot goes to docs/console/keys.png.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { Pawl } from "../../src/index.js";
import { createConsole, createMetrics, serveMetrics, type MetricsServer } from "../../observability/index.js";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import { jobEvent } from "../helpers/events.js";
import { gate } from "../helpers/gate.js";
import { findChromium, launchChromium } from "../../scripts/lib/chromium.js";

const updateShots = process.env.PAWL_UPDATE_SCREENSHOTS === "1";
const executablePath = findChromium();

let cleanup: () => Promise<void>;
let node: Pawl;
let server: MetricsServer;
let browser: Browser;
let page: Page;
let shots: string;
const held = gate();

describe.skipIf(!executablePath)("the busiest concurrency keys in headless Chromium", () => {
  beforeAll(async () => {
    const s = await setupSchema("console_keys");
    cleanup = s.cleanup;
    node = testPawl(s.schema, { concurrency: 8 });
    node.register("report.build", () => held.promise);
    await node.start();
    server = await serveMetrics(createMetrics(node), { port: 0, console: createConsole(node) });
    shots = updateShots
      ? new URL("../../docs/console/", import.meta.url).pathname
      : join(mkdtempSync(join(tmpdir(), "pawl-console-keys-")), "/");
    browser = await launchChromium(executablePath as string);
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  });

  afterAll(async () => {
    held.open();
    await browser?.close();
    await server?.close();
    await node?.close();
    await cleanup?.();
    if (shots && !updateShots) rmSync(shots, { recursive: true, force: true });
  });

  it("shows the keys at their limit first by running jobs, with their limit and waiting jobs", async () => {
    const started = jobEvent(node.events, "job:started");
    const job = (key: string, limit: number) => ({
      type: "report.build",
      concurrencyKey: key,
      concurrencyLimit: limit,
    });
    // tenant-42: 3 of 3 running, 4 waiting. tenant-7: 1 of 1, 2 waiting. tenant-9: 1 of 4, none waiting.
    const t42 = await node.enqueueMany(Array.from({ length: 7 }, () => job("tenant-42", 3)));
    const t7 = await node.enqueueMany(Array.from({ length: 3 }, () => job("tenant-7", 1)));
    const t9 = await node.enqueue("report.build", {}, { concurrencyKey: "tenant-9", concurrencyLimit: 4 });
    await started.forAll([...t42.slice(0, 3), t7[0]!, t9].map((j) => j.id));

    const res = await page.goto(`${server.url.replace(/\/metrics$/, "")}/console`, { waitUntil: "load" });
    expect(res?.status()).toBe(200);
    const section = page.locator("#concurrency-keys");
    await expect(section.locator("h2").textContent()).resolves.toBe("Busiest concurrency keys");
    await expect(section.locator("#keys-summary").textContent()).resolves.toBe(
      "3 active keys, 2 at their limit; 5 keyed jobs running, 6 due and waiting.",
    );
    const rows = await section
      .locator("tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    expect(rows).toEqual([
      ["tenant-42", "3", "3", "4", "at limit"],
      ["tenant-7", "1", "1", "2", "at limit"],
      ["tenant-9", "1", "4", "0", ""],
    ]);
    // Styled under the Content-Security-Policy: the page's nonce'd stylesheet colours the mark. (The
    // function runs in the page; this project's TypeScript has no DOM library, hence the cast.)
    type Styles = { getComputedStyle(el: unknown): { color: string } };
    const color = await section
      .locator(".s-PAUSED")
      .first()
      .evaluate((el) => (globalThis as unknown as Styles).getComputedStyle(el).color);
    expect(color).toBe("rgb(138, 90, 0)");
    await page.screenshot({ path: `${shots}keys.png`, fullPage: true });
  });
});

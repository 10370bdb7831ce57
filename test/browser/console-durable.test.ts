/**
 * A durable job's page and a durable machine's page in a real headless Chromium (as
 * test/browser/console.test.ts: Debian's `chromium` driven by playwright-core, skipped without one): the
 * steps timeline with a wait on a signal, and a machine's state, timer and event history. With
 * PAWL_UPDATE_SCREENSHOTS=1 the screenshots go to docs/console/job-durable.png and job-machine.png.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { Pawl } from "../../src/index.js";
import { createConsole, createMetrics, serveMetrics, type MetricsServer } from "../../observability/index.js";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import { onAny } from "../helpers/events.js";
import { orderMachine } from "../integration/machines/order-machine.js";
import { findChromium, launchChromium } from "../../scripts/lib/chromium.js";

const updateShots = process.env.PAWL_UPDATE_SCREENSHOTS === "1";
const executablePath = findChromium();

let cleanup: () => Promise<void>;
let node: Pawl;
let server: MetricsServer;
let browser: Browser;
let page: Page;
let shots: string;

describe.skipIf(!executablePath)("durable jobs' pages in headless Chromium", () => {
  beforeAll(async () => {
    const s = await setupSchema("console_durable");
    cleanup = s.cleanup;
    node = testPawl(s.schema);
    node.register("onboarding", async (p: { user: string }, ctx) => {
      await ctx.step("create-account", () => ({ account: `acct-${p.user}` }));
      await ctx.step("send-welcome", () => ({ sent: true }));
      await ctx.sleep("cool-off", 50);
      return ctx.waitForSignal("approval", { timeoutMs: 86_400_000 });
    });
    node.registerMachine(
      "order",
      orderMachine(async () => ({ receipt: "r" })),
    );
    await node.start();
    server = await serveMetrics(createMetrics(node), { port: 0, console: createConsole(node) });
    shots = updateShots
      ? new URL("../../docs/console/", import.meta.url).pathname
      : join(mkdtempSync(join(tmpdir(), "pawl-console-durable-")), "/");
    browser = await launchChromium(executablePath as string);
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await node?.close();
    await cleanup?.();
    if (shots && !updateShots) rmSync(shots, { recursive: true, force: true });
  });

  const open = async (id: string) => {
    const res = await page.goto(`${server.url.replace(/\/metrics$/, "")}/console/jobs/${id}`, {
      waitUntil: "load",
    });
    expect(res?.status()).toBe(200);
  };
  const rows = (section: string) =>
    page
      .locator(`${section} + table tbody tr`)
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));

  it("shows a durable job's steps, the sleep it took and the signal it waits for", async () => {
    const job = await node.enqueue("onboarding", { user: "ada" });
    // It parks on the sleep, then on the wait: each park is an event; the step list says which one it was.
    for (;;) {
      const next = onAny(node, "job:waiting", (e) => e.job.id === job.id);
      next.catch(() => {}); // not awaited once the wait is found
      const read = await node.getJob(job.id);
      if (read?.steps?.some((s) => s.kind === "signal" && s.status === "waiting")) break;
      await next;
    }
    await open(job.id);
    const steps = await rows("#steps");
    expect(steps.map((r) => [r[0], r[1], r[2]])).toEqual([
      ["create-account", "step", "succeeded"],
      ["send-welcome", "step", "succeeded"],
      ["cool-off", "sleep", "succeeded"],
      ["approval", "signal", "waiting"],
    ]);
    expect(steps[0]![7]).toBe(`{"account": "acct-ada"}`);
    expect(steps[3]![7]).toMatch(/^waits for signal approval until in (23|24)h$/);
    await page.screenshot({ path: `${shots}job-durable.png`, fullPage: true });
  });

  it("shows a machine's state, its timeout and its events", async () => {
    const first = onAny(node, "job:waiting", (e) => e.job.type === "order");
    const job = await node.enqueue("order", { orderId: "o-1", amount: 42 });
    await first;
    for (const event of [
      { type: "NOTE", text: "gift wrap" },
      { type: "SHIP", carrier: "dhl" },
    ]) {
      const again = onAny(node, "job:waiting", (e) => e.job.id === job.id);
      await node.send(job.id, event);
      await again;
    }
    await open(job.id);
    await expect(page.locator("code.state-value").textContent()).resolves.toBe(`"awaitingPayment"`);
    const events = await page
      .locator("#machine ~ table")
      .last()
      .evaluate((t) =>
        [...t.querySelectorAll("tbody tr")].map((tr) =>
          [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent),
        ),
      );
    expect(events).toEqual([
      ["2", "SHIP", "ignored"],
      ["1", "NOTE", "consumed"],
    ]);
    await page.screenshot({ path: `${shots}job-machine.png`, fullPage: true });
  });
});

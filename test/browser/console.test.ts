/**
 * The console in a real headless Chromium (Debian's `chromium`, driven by playwright-core; no browser
 * download). An operator finds a DEAD job, reads its errors and its explain answer, retries it and sees
 * it succeed; pauses a queue and sees the explain answer name the pause; and, on a read-only console,
 * finds no retry button and has the POST refused. Every page is screenshotted; with
 * PAWL_UPDATE_SCREENSHOTS=1 into docs/console/*.png, so the pictures in the docs come from this test.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { NonRetryableError, type Pawl } from "../../src/index.js";
import { createConsole, createInspector, createMetrics, serveMetrics } from "../../observability/index.js";
import type { MetricsServer } from "../../observability/index.js";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import { jobEvent } from "../helpers/events.js";
import { findChromium, launchChromium } from "../../scripts/lib/chromium.js";

/**
 * Where the screenshots go: docs/console/ with PAWL_UPDATE_SCREENSHOTS=1 (how the docs' pictures are
 * refreshed), else a temporary directory, so a test run never rewrites tracked files.
 */
const updateShots = process.env.PAWL_UPDATE_SCREENSHOTS === "1";
let shots: string;
const token = "browser-test-token";

const executablePath = findChromium();
if (!executablePath) {
  console.warn(
    "test/browser skipped: no chromium binary found (apt-get install chromium, or set PAWL_CHROMIUM)",
  );
}

let schema: string;
let cleanup: () => Promise<void>;
let node: Pawl;
let browser: Browser;
let page: Page;
let server: MetricsServer;
let readOnly: MetricsServer;
let failing = true;
/** Holds the workflow's transform step RUNNING until the test has seen it on the graph. */
const transformHolder: { held: Promise<void> } = { held: Promise.resolve() };
const loadTimes: Record<string, number> = {};

describe.skipIf(!executablePath)("console in headless Chromium", () => {
  beforeAll(async () => {
    ({ schema, cleanup } = await setupSchema("console"));
    node = testPawl(schema, { breakers: { "pay-api": { failureThreshold: 1, openMs: 600_000 } } });
    node.register("invoice.charge", async () => {
      if (failing) throw new NonRetryableError("card declined by the payment provider");
      return { charged: true };
    });
    node.register(
      "ledger.sync",
      async () => {
        throw new Error("ledger answered 503");
      },
      { service: "pay-api", maxAttempts: 1 },
    );
    node.register("report.build", async () => ({ ok: true }), { queue: "reports" });
    for (const step of ["etl.extract", "etl.enrich", "etl.load"]) node.register(step, async () => ({ step }));
    node.register("etl.transform", async () => {
      await transformHolder.held;
      return { step: "transform" };
    });
    await node.start();
    const metrics = createMetrics(node);
    const inspector = createInspector(node, { token });
    server = await serveMetrics(metrics, {
      port: 0,
      inspector,
      console: createConsole(node, { token, actions: true }),
    });
    readOnly = await serveMetrics(metrics, { port: 0, console: createConsole(node, { token }) });
    shots = updateShots
      ? new URL("../../docs/console/", import.meta.url).pathname
      : join(mkdtempSync(join(tmpdir(), "pawl-console-")), "/");
    mkdirSync(shots, { recursive: true });
    browser = await launchChromium(executablePath as string);
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await readOnly?.close();
    await node?.close();
    await cleanup?.();
    if (shots && !updateShots) rmSync(shots, { recursive: true, force: true });
    if (Object.keys(loadTimes).length > 0) console.log("console page load times (ms):", loadTimes);
  });

  const origin = () => server.url.replace(/\/metrics$/, "");

  /** Opens a console page and records how long it took to load. */
  async function open(path: string, name: string, base = origin()): Promise<void> {
    const started = performance.now();
    const res = await page.goto(`${base}/console${path}`, { waitUntil: "load" });
    loadTimes[name] = Math.round(performance.now() - started);
    expect(res?.status()).toBe(200);
  }

  /** Signs in through the console's form: the token goes in a POST body and comes back as a cookie. */
  async function signIn(base = origin()): Promise<void> {
    await page.goto(`${base}/console`);
    await page.fill("#token", token);
    await Promise.all([page.waitForURL(`${base}/console/`), page.click('button[type="submit"]')]);
  }

  const shot = (name: string) => page.screenshot({ path: `${shots}${name}.png`, fullPage: true });

  it("refuses a visitor without the token", async () => {
    const res = await page.goto(`${origin()}/console`);
    expect(res?.status()).toBe(401);
    // The sign-in form, which does not carry the token anywhere in the page.
    await expect(page.locator('input[name="token"]').count()).resolves.toBe(1);
    expect(await page.content()).not.toContain(token);
    await page.fill("#token", "wrong");
    await page.click('button[type="submit"]');
    await expect(page.locator(".bad").count()).resolves.toBe(1);
  });

  it("finds a DEAD job, reads its errors and explain answer, retries it and sees it succeed", async () => {
    const jobDead = jobEvent(node.events, "job:dead");
    const job = await node.enqueue("invoice.charge", { invoice: 1042 });
    await jobDead.for(job.id);

    // The token once, in the sign-in form: the console answers with an HttpOnly cookie.
    await signIn();
    await open("", "overview");
    expect(page.url()).not.toContain(token);
    expect(await page.content()).not.toContain(token);
    await expect(page.locator("h1").textContent()).resolves.toBe("Overview");
    await shot("overview");

    await open("/dlq", "dlq");
    await shot("dlq");
    await page.click(`a[href="/console/jobs/${job.id}"]`);
    await page.waitForURL(`**/console/jobs/${job.id}`);
    await expect(page.locator(".error-message").first().textContent()).resolves.toBe(
      "card declined by the payment provider",
    );
    await expect(page.locator("#explain .verdict").getAttribute("data-verdict")).resolves.toBe("finished");
    await expect(page.locator('#explain li[data-kind="finished"]').textContent()).resolves.toContain(
      "finished DEAD",
    );
    await shot("job-dead");

    failing = false;
    const succeeded = node.events.next("job:succeeded", (e) => e.job.id === job.id);
    await page.click('button[data-action="retry"]');
    await succeeded;
    await open(`/jobs/${job.id}`, "job");
    await expect(page.locator(".status").first().textContent()).resolves.toBe("SUCCEEDED");
    await expect(page.locator('#explain li[data-kind="finished"]').textContent()).resolves.toContain(
      "finished SUCCEEDED",
    );
    await shot("job-succeeded");
  });

  it("pauses a queue from the console and the explain answer names the pause", async () => {
    await open("/paused", "paused");
    await page.selectOption('select[name="kind"]', "queue");
    await page.fill('input[name="name"]', "reports");
    await page.click('button[data-action="pause"]');
    await page.waitForURL("**/console/paused");
    await expect(page.locator("td", { hasText: "reports" }).first().isVisible()).resolves.toBe(true);
    await shot("paused");

    const job = await node.enqueue("report.build", {}, { queue: "reports" });
    await open(`/jobs/${job.id}`, "job-paused");
    await expect(page.locator('#explain li[data-kind="paused"]').textContent()).resolves.toContain(
      'its queue "reports" is paused',
    );
    await shot("job-paused");

    const succeeded = node.events.next("job:succeeded", (e) => e.job.id === job.id);
    await open("/paused", "paused");
    await page.click('button[data-action="resume"]');
    await page.waitForURL("**/console/paused");
    await succeeded;
  });

  it("lists jobs with filters and keyset paging, and shows nodes, breakers and actors", async () => {
    await node.enqueueMany(
      Array.from({ length: 60 }, (_, i) => ({ type: "report.build", payload: { i }, queue: "reports" })),
    );
    await open("/jobs?type=report.build", "jobs");
    await expect(page.locator("tbody tr").count()).resolves.toBe(50);
    await shot("jobs");
    await page.click('a[rel="next"]');
    await expect(page.locator("tbody tr").count()).resolves.toBeGreaterThan(0);
    // Text in the payload, from the filter form: one of the 60 has {"i": 42}.
    await open("/jobs?type=report.build", "jobs");
    await page.fill('input[name="text"]', '"i": 42');
    await page.click('form.filters button[type="submit"]');
    await page.waitForURL(/text=/);
    await expect(page.locator("tbody tr").count()).resolves.toBe(1);
    await expect(page.locator("p.note").textContent()).resolves.toMatch(
      /Searched the payloads of \d+ jobs: 1 found/,
    );

    const opened = node.events.next("breaker:change", (e) => e.service === "pay-api" && e.to === "OPEN");
    await node.enqueue("ledger.sync", {});
    await opened;
    await node.clusterServices!.heartbeat.runOnce(); // publish the open breaker now
    await open("/nodes", "nodes");
    await expect(page.locator("td", { hasText: node.nodeId }).first().isVisible()).resolves.toBe(true);
    await shot("nodes");
    await open("/breakers", "breakers");
    await expect(page.locator("td", { hasText: "pay-api" }).first().isVisible()).resolves.toBe(true);
    await shot("breakers");
    await open("/actors", "actors");
    // The actors page's script opened the inspector's event stream and said so.
    await page.locator("#events", { hasText: "connected" }).waitFor();
    await shot("actors");
  });

  it("opens a workflow from a member's page and sees its dependency graph, each step with its state", async () => {
    let releaseTransform: () => void = () => {};
    transformHolder.held = new Promise<void>((resolve) => (releaseTransform = resolve));
    const transformStarted = node.events.next("job:started", (e) => e.job.type === "etl.transform");
    const wf = await node.workflow({
      name: "nightly-etl",
      jobs: [
        { name: "extract", type: "etl.extract" },
        { name: "transform", type: "etl.transform", dependsOn: ["extract"] },
        { name: "enrich", type: "etl.enrich", dependsOn: ["extract"] },
        { name: "load", type: "etl.load", dependsOn: ["transform", "enrich"] },
      ],
    });
    await transformStarted;
    const extractId = wf.jobIds[0] as string;

    await open(`/jobs/${extractId}`, "job-in-flow");
    await page.click(`h2#flow a[href="/console/flows/${wf.flowId}"]`);
    await page.waitForURL(`**/console/flows/${wf.flowId}`);
    const node_ = (step: string) => page.locator(`svg a.g-node[data-step="${step}"]`);
    await expect(node_("extract").getAttribute("data-status")).resolves.toBe("SUCCEEDED");
    await expect(node_("transform").getAttribute("data-status")).resolves.toBe("RUNNING");
    await expect(node_("load").getAttribute("data-status")).resolves.toBe("WAITING");
    // Laid out by dependency: extract first, transform and enrich next, load last; four edges drawn.
    await expect(node_("extract").getAttribute("data-layer")).resolves.toBe("0");
    await expect(node_("enrich").getAttribute("data-layer")).resolves.toBe("1");
    await expect(node_("load").getAttribute("data-layer")).resolves.toBe("2");
    await expect(page.locator("svg path.g-edge").count()).resolves.toBe(4);
    await expect(node_("load").locator("text.g-status").textContent()).resolves.toBe("WAITING");
    await expect(node_("load").boundingBox()).resolves.not.toBeNull(); // rendered, not only in the DOM
    await shot("flow");

    await open("/flows", "flows");
    await expect(page.locator(`a[href="/console/flows/${wf.flowId}"]`).count()).resolves.toBe(1);
    await shot("flows");

    const loaded = node.events.next("job:succeeded", (e) => e.job.type === "etl.load");
    releaseTransform();
    await loaded;
    await open(`/flows/${wf.flowId}`, "flow");
    await expect(node_("load").getAttribute("data-status")).resolves.toBe("SUCCEEDED");
  });

  it("shows the overview's counts by queue, the oldest pending job and the schedules' next fires", async () => {
    await node.enqueue("nobody.runs", {}, { queue: "backlog", runAt: new Date(Date.now() - 1000) });
    await node.schedule("nightly-report", "0 3 * * *", {}, { type: "report.build" });
    await open("", "overview-later");
    await expect(page.locator("td", { hasText: "backlog" }).first().isVisible()).resolves.toBe(true);
    await expect(page.locator("#oldest-pending b").textContent()).resolves.not.toBe("none due");
    await expect(page.locator("#throughput b").textContent()).resolves.not.toBe("0");
    await shot("overview");
    await open("/schedules", "schedules");
    const row = page.locator("tr", { has: page.locator('[data-schedule="nightly-report"]') });
    await expect(row.locator(".next-fire time").getAttribute("datetime")).resolves.toMatch(
      /T03:00:00\.000Z$/,
    );
    await shot("schedules");
  });

  it("read-only by default: no retry button, and the POST is refused", async () => {
    failing = true;
    const jobDead = jobEvent(node.events, "job:dead");
    const job = await node.enqueue("invoice.charge", { invoice: 7 });
    await jobDead.for(job.id);
    const base = readOnly.url.replace(/\/metrics$/, "");
    // The session cookie is the host's (cookies ignore the port), so the sign-in above holds here too.
    await open(`/jobs/${job.id}`, "job-read-only", base);
    await expect(page.locator('#explain li[data-kind="finished"]').count()).resolves.toBe(1);
    await expect(page.locator('button[data-action="retry"]').count()).resolves.toBe(0);
    await expect(page.locator(".mode").getAttribute("data-mode")).resolves.toBe("read-only");
    const res = await page.request.post(`${base}/console/jobs/${job.id}/retry`, {
      headers: { Origin: base },
      form: { csrf: "anything" },
    });
    expect(res.status()).toBe(403);
    expect((await node.getJob(job.id))?.status).toBe("DEAD");
  });

  it("refuses a cross-site POST even with actions on", async () => {
    const res = await page.request.post(`${origin()}/console/dlq/purge`, {
      headers: { Origin: "https://evil.example" },
      form: {},
    });
    expect(res.status()).toBe(403);
    const dead = await node.dlq.list();
    expect(dead.length).toBeGreaterThan(0);
  });
});

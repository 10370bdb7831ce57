/**
 * The console's job page for durable jobs, rendered over HTTP from a real database: a durable handler's
 * steps timeline (a recorded step, a failed one, a wait on a signal with its timeout), a durable
 * machine's state, pending timer and event history, with hostile step names, results, errors and event
 * types shown escaped, never as markup; and the caps on long histories.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Job, Pawl } from "../../../src/index.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { jobHistory, maxHistoryRows } from "../../../observability/console/job-history.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { orderMachine } from "../machines/order-machine.js";

const hostile = `<img src=x onerror="alert(1)">`;
const escaped = `&lt;img src=x onerror=&quot;alert(1)&quot;&gt;`;

let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
let server: MetricsServer;

beforeAll(async () => {
  const s = await setupSchema("console_hist");
  cleanup = s.cleanup;
  const schema = s.schema;
  nodes = await startNodes(schema, 1, (n) => {
    n.registerMachine(
      "order",
      orderMachine(async () => ({ receipt: "r" })),
    );
    n.register(
      "approve",
      async (_p: unknown, ctx) => {
        await ctx.step(`fetch ${hostile}`, () => ({ html: hostile }));
        try {
          await ctx.step("flaky", () => {
            throw new Error(`smtp said ${hostile}`);
          });
        } catch {
          // recorded as failed; the job goes on to wait
        }
        return ctx.waitForSignal("approval", { timeoutMs: 3_600_000 });
      },
      { maxAttempts: 1 },
    );
  });
  server = await serveMetrics(createMetrics(nodes[0]!), {
    port: 0,
    console: createConsole(nodes[0]!),
  });
});

afterAll(async () => {
  await server?.close();
  await closeAll(nodes);
  await cleanup?.();
});

const page = async (id: string) => {
  const res = await fetch(`${server.url.replace(/\/metrics$/, "/console")}/jobs/${id}`);
  return { status: res.status, body: await res.text() };
};
const parked = (id: string) => onAny(nodes, "job:waiting", (e) => e.job.id === id);

describe("the console's job page", () => {
  it("shows a durable job's steps as a timeline, the wait's signal and deadline, all escaped", async () => {
    const node = nodes[0]!;
    const waiting = onAny(nodes, "job:waiting");
    const job = await node.enqueue("approve", {});
    await waiting;
    const { status, body } = await page(job.id);
    expect(status).toBe(200);
    expect(body).toContain(`<h2 id="steps">Steps</h2>`);
    // The hostile name, result and error appear only escaped.
    expect(body).not.toContain(hostile);
    expect(body).toContain(`<span class="step-name">fetch ${escaped}</span>`);
    expect(body).toMatch(/<code class="preview">\{&quot;html&quot;: &quot;&lt;img src=x/);
    expect(body).toContain(`<span class="error-message">smtp said ${escaped}</span>`);
    expect(body).toContain(`<span class="status step-failed">failed</span>`);
    // The wait says what it waits for and until when (a timeout an hour on).
    expect(body).toMatch(
      /<span class="waits">waits for signal <b>approval<\/b> until <time datetime="[^"]+" title="[^"]+">in (59|60)m<\/time><\/span>/,
    );
    const rows = body.slice(body.indexOf(`id="steps"`), body.indexOf("Attempts with errors"));
    expect(rows.match(/<tr>/g)).toHaveLength(4); // the header and three steps
    expect(body).not.toContain(`<h2 id="machine">`);
  });

  it("shows a machine's state, pending timer and event history, escaping an event type", async () => {
    const node = nodes[0]!;
    const first = onAny(nodes, "job:waiting");
    const job = await node.enqueue("order", { orderId: "o1", amount: 5 });
    await first;
    const again = parked(job.id);
    await node.send(job.id, { type: hostile });
    await again;
    const { status, body } = await page(job.id);
    expect(status).toBe(200);
    expect(body).toContain(`<h2 id="machine">Machine</h2>`);
    expect(body).toContain(`<code class="state-value">&quot;awaitingPayment&quot;</code>`);
    expect(body).toMatch(
      /<td>xstate\.after\.3600000\.[^<]+<\/td><td><time datetime="[^"]+" title="[^"]+">in (59|60)m/,
    );
    expect(body).not.toContain(hostile);
    expect(body).toContain(`<span class="event-type">${escaped}</span>`);
    expect(body).toContain(`<span class="status event-ignored">ignored</span>`);
    expect(body).toContain("&quot;orderId&quot;: &quot;o1&quot;"); // the context
  });

  it("caps long histories and says how many rows it left out", () => {
    const at = new Date("2026-01-01T00:00:00Z");
    const steps = Array.from({ length: maxHistoryRows + 7 }, (_, i) => ({
      name: `s${i}`,
      kind: "step" as const,
      status: "succeeded" as const,
      attempt: 1,
      startedAt: at,
      finishedAt: at,
      wakeAt: null,
      children: null,
      resultPreview: "1",
      error: null,
    }));
    const html = jobHistory({ steps } as unknown as Job, at).html;
    expect(html).toContain(`data-left-out="7"`);
    expect(html).toContain("7 older steps not shown.");
    // The newest are kept: the first seven are the ones left out.
    expect(html).not.toContain(">s6<");
    expect(html).toContain(">s7<");
    expect(html).toContain(`>s${maxHistoryRows + 6}<`);
  });
});

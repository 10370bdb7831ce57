/**
 * The postgres coordinator never has two statements waiting in its listening client's queue: pg 8 prints
 * a DeprecationWarning into the host process when a query is issued while another waits there, and pg 9
 * will refuse it. Before the connection is up every statement waits, so only one LISTEN may be issued
 * before connecting; the probe channel's LISTEN and the NOTIFYs go one at a time once it is up, through a
 * start, a burst of hints and a reconnect after the listener's backend is terminated.
 *
 * Its own file on purpose: pg prints the warning once per loaded copy of pg, so any earlier test in the
 * same file could have used it up.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createCoordinator, type Coordinator } from "../../../coordinators/index.js";
import { databaseUrl, testPool, uniqueSchema } from "../../helpers/db.js";
import { nextEvent, nextHint } from "../../contract/contract-helpers.js";

const pool = testPool(1);
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);
process.on("warning", onWarning);
const coordinators: Coordinator[] = [];

afterAll(async () => {
  process.off("warning", onWarning);
  await Promise.all(coordinators.map((c) => c.close()));
  await pool.end();
});

async function create(schema: string, nodeId: string): Promise<Coordinator> {
  const c = await createCoordinator("postgres", {
    nodeId,
    connectionString: databaseUrl,
    schema,
    coalesceMs: 0,
    reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
  });
  coordinators.push(c);
  return c;
}

const overlapping = () => warnings.filter((w) => w.message.includes("already executing a query"));

describe("the postgres coordinator's listening client", () => {
  it("starts, publishes a burst and reconnects with no statement queued behind another", async () => {
    const schema = uniqueSchema("listen_queries");
    const [a, b] = [await create(schema, "lq-a"), await create(schema, "lq-b")];
    await Promise.all([a.start(), b.start()]);

    const burst = nextHint(b, (h) => h.target === "burst-19");
    for (let i = 0; i < 20; i++) a.notifyNewWork({ priority: i, source: "lq-a", target: `burst-${i}` });
    await burst;

    const reconnected = nextEvent(a, "connected", 15_000);
    const { rowCount } = await pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pawl-wakeup-lq-a'",
    );
    expect(rowCount).toBe(1);
    await reconnected;
    const after = nextHint(b, (h) => h.target === "after-reconnect");
    a.notifyNewWork({ priority: 1, source: "lq-a", target: "after-reconnect" });
    await after;

    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(overlapping()).toEqual([]);
  });
});

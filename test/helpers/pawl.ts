import type pg from "pg";
import { createPawl, type Pawl } from "../../src/index.js";
import type { PawlConfig } from "../../src/input/config.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "./db.js";

/** A migrated schema of its own for one test file, with a raw pool for assertions. */
export async function setupSchema(prefix = "t"): Promise<{
  schema: string;
  pool: pg.Pool;
  cleanup: () => Promise<void>;
}> {
  const schema = uniqueSchema(prefix);
  const pool = testPool(8);
  const pawl = createPawl({ connectionString: databaseUrl, schema, logger: false });
  await pawl.migrate();
  await pawl.close();
  return {
    schema,
    pool,
    cleanup: async () => {
      await dropSchema(pool, schema);
      await pool.end();
    },
  };
}

/**
 * A pawl on the test database and `schema`: a client, or a node once started. Unless the test sets its
 * own, it runs 4 slots and polls fast: empty polls back off at most to 500 ms (production backs off to
 * 30 s), so a job rescheduled a moment ahead is picked up promptly even on a loaded machine; a test that
 * sets its own pollIntervalMs above that keeps it (the bounds are lifted to fit). With `queues` the
 * concurrency is left to them (pawl requires the two to agree). Unless the test chooses them, there is
 * no coordinator (pawl's default LISTENs, one more connection per node on the shared server, and the fast
 * polling finds the work anyway) and no logger (the default writes warnings to stderr, and many tests
 * provoke them on purpose). `{ pawlDefaults: true }` leaves every setting at pawl's own default, for a
 * test of what the defaults do.
 */
export function testPawl(
  schema: string,
  config: PawlConfig = {},
  options: { pawlDefaults?: boolean } = {},
): Pawl {
  if (options.pawlDefaults) return createPawl({ connectionString: databaseUrl, schema, ...config });
  return createPawl({
    connectionString: databaseUrl,
    schema,
    ...(config.queues === undefined ? { concurrency: 4 } : {}),
    pollIntervalMs: 50,
    completionFlushMs: 1,
    polling: { maxDelayMs: 500, deepIdleDelayMs: 500 },
    coordinator: "none",
    logger: false,
    ...config,
  } as PawlConfig);
}

/**
 * Starts `node` and waits until its coordinator is connected (for Hazelcast: subscribed). start() alone
 * resolves after the coordinator's `startTimeoutMs` (3 s) when the first connect is slow, as it can be on
 * a loaded machine, and a hint published or sent meanwhile is dropped by design: a test of delivery
 * waits for the connection first.
 */
export async function startConnected(node: Pawl, timeoutMs = 20_000): Promise<void> {
  const connected = node.events.next("coordinator:connected", undefined, timeoutMs);
  await node.start();
  await connected;
}

/**
 * Creates `n` started nodes on `schema` (distinct ids and pools, polling at least every 200 ms), after
 * `setup` registered their handlers.
 */
export async function startNodes(
  schema: string,
  n: number,
  setup: (node: Pawl, index: number) => void,
  config: PawlConfig = {},
): Promise<Pawl[]> {
  // Idle nodes back off to at most 200 ms between polls, so work enqueued by a plain client (no wakeup)
  // is found promptly whatever the test did before.
  const polling = { maxDelayMs: 200, deepIdleDelayMs: 200 };
  const nodes = Array.from({ length: n }, (_, i) =>
    testPawl(schema, { nodeId: `${schema}-n${i}`, polling, ...config }),
  );
  nodes.forEach(setup);
  await Promise.all(nodes.map((node) => node.start()));
  return nodes;
}

/** Closes every node (ignoring nodes already closed). */
export async function closeAll(nodes: readonly Pawl[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.close().catch(() => {})));
}

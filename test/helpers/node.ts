import { createPawl, type Pawl } from "../../src/index.js";
import type { PawlConfig } from "../../src/input/config.js";
import { databaseUrl } from "./db.js";

/**
 * A node on the test database with fast polling. Empty polls back off at most to 500 ms (production
 * backs off to 30 s), so a job rescheduled a moment ahead is picked up promptly even on a loaded machine;
 * a test that sets its own pollIntervalMs above that keeps it (the bounds are lifted to fit).
 */
export function testNode(schema: string, config: PawlConfig = {}): Pawl {
  return createPawl({
    connectionString: databaseUrl,
    schema,
    concurrency: 4,
    pollIntervalMs: 50,
    completionFlushMs: 1,
    polling: { maxDelayMs: 500, deepIdleDelayMs: 500 },
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

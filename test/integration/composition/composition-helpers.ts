/**
 * Helpers of the composition tests: several nodes (Pawl instances, each on its own pool) on one schema,
 * and waiting for an event on any of them.
 */
import type { Pawl, PawlConfig, PawlEventName, PawlEvents } from "../../../src/index.js";
import { testPawl } from "../../helpers/pawl.js";

/** Resolves with the first `name` event matching `predicate` on any of `nodes`. */
export function onAny<E extends PawlEventName>(
  nodes: readonly Pawl[],
  name: E,
  predicate: (payload: PawlEvents[E]) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<PawlEvents[E]> {
  return new Promise((resolve, reject) => {
    const offs: (() => void)[] = [];
    const done = () => {
      clearTimeout(timer);
      for (const off of offs) off();
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${name} on ${nodes.length} node(s)`));
    }, timeoutMs);
    for (const n of nodes) {
      offs.push(
        n.on(name, (payload) => {
          if (!predicate(payload)) return;
          done();
          resolve(payload);
        }),
      );
    }
  });
}

/** Counts `name` events on every node until the returned stop function is called. */
export function count<E extends PawlEventName>(
  nodes: readonly Pawl[],
  name: E,
  predicate: (payload: PawlEvents[E]) => boolean = () => true,
): { readonly n: number; stop: () => void } {
  let n = 0;
  const offs = nodes.map((node) => node.on(name, (p) => void (predicate(p) && n++)));
  return {
    get n() {
      return n;
    },
    stop: () => offs.forEach((off) => off()),
  };
}

/**
 * Creates `n` nodes on `schema` (distinct ids and pools, polling at least every 200 ms), lets `setup`
 * register handlers, and starts them.
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

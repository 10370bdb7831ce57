/**
 * Whether a persisted machine snapshot still fits the machine registered for it: every state its value
 * names must exist, and every running invoked actor must still be provided. xstate restores a snapshot
 * that names a removed state by throwing deep inside `createActor`, and silently drops a child whose actor
 * it cannot resolve (the machine would then wait forever for a result that never comes). pawl checks
 * first, so such a job ends DEAD with an error that names what is missing, instead of misbehaving.
 *
 * The machine is described as plain data (its state tree and its actor names), so this stays pure.
 */

/** A machine's states: each state's child states, by key (an atomic or final state has none). */
export interface StateTree {
  [key: string]: StateTree;
}

/** An xstate state value: an atomic state's key, or the active child of each compound / parallel state. */
export type StateValueJson = string | { [key: string]: StateValueJson };

/** What no longer fits: a state (its path, `machine.parent.child`) or an invoked actor's name. */
export type Misfit = { kind: "state"; path: string } | { kind: "actor"; src: string };

function missingIn(tree: StateTree, value: StateValueJson, path: string): string | null {
  if (typeof value === "string") {
    return Object.prototype.hasOwnProperty.call(tree, value) ? null : `${path}.${value}`;
  }
  for (const [key, child] of Object.entries(value)) {
    if (!Object.prototype.hasOwnProperty.call(tree, key)) return `${path}.${key}`;
    const missing = missingIn(tree[key] ?? {}, child, `${path}.${key}`);
    if (missing !== null) return missing;
  }
  return null;
}

/**
 * The first part of a snapshot the machine no longer has, or null when it fits.
 *
 * @param rootId The machine's id, the first segment of a reported path.
 * @param tree The machine's states.
 * @param value The snapshot's state value.
 * @param runningSrcs The actor names of the snapshot's running children.
 * @param actors The actor names the machine provides.
 * @example
 * ```ts
 * snapshotMisfit("order", { paying: {}, shipped: {} }, "legacyReview", [], ["charge"]);
 * // { kind: "state", path: "order.legacyReview" }
 * ```
 */
export function snapshotMisfit(
  rootId: string,
  tree: StateTree,
  value: StateValueJson,
  runningSrcs: readonly string[],
  actors: readonly string[],
): Misfit | null {
  const path = missingIn(tree, value, rootId);
  if (path !== null) return { kind: "state", path };
  const known = new Set(actors);
  for (const src of runningSrcs) if (!known.has(src)) return { kind: "actor", src };
  return null;
}

/**
 * Which claims a node's poll sends when jobs may carry concurrency keys (docs/fairness.md): the unkeyed
 * claim, the keyed claim, or both and in which order. Pure: each function takes what the last answers
 * said and `now`, and returns the plan or the new memory; src/store/claim/keyed-claimer.ts runs the
 * statements.
 *
 * - Both claims run in a poll, alternating which goes first, so a backlog of keyed jobs and one of unkeyed
 *   jobs share a node's room about evenly.
 * - While no keyed row is live (the keyed answer says so), the keyed claim is not sent until a wakeup or
 *   `recheckMs` later: a node whose jobs carry no keys pays no extra statement per poll. A wakeup whose
 *   hint says the new work carries no key leaves that wait alone. A poll woken for work that may carry
 *   keys sends the unkeyed claim alone when it finds jobs (they start after one statement, not two), and
 *   the keyed look follows at the next poll.
 * - When the unkeyed claim came back short, the keyed claim goes first for `recheckMs`; when it came back
 *   empty while keyed rows are live, it is not sent at all for that long (an unkeyed claim that finds
 *   nothing still reads the oldest rows of the claim index, keyed rows it must step over). A wakeup ends
 *   both, so unkeyed work that appears meanwhile starts at once when its enqueue wakes the node.
 */

/** What the policy remembers between polls. */
export interface KeyedClaimMemory {
  /** Whether the last keyed answer found keyed rows live (assumed until the first answer). */
  keyedLive: boolean;
  /** Whether the keyed claim went first in the last poll that sent both. */
  keyedFirst: boolean;
  /** While no keyed row is live: when to look again without a wakeup (ms). */
  nextLookMs: number;
  /** Until when the keyed claim goes first: the unkeyed claim's last answer was short (ms). */
  keyedFirstUntilMs: number;
  /** Until when the unkeyed claim is not sent: its last answer was empty while keyed rows were live (ms). */
  unkeyedQuietUntilMs: number;
  /** A poll returned unkeyed jobs without looking at keyed rows: the next poll looks. */
  keyedOwed: boolean;
}

/** A node's memory before its first poll. */
export const initialKeyedClaimMemory: KeyedClaimMemory = {
  keyedLive: true,
  keyedFirst: false,
  nextLookMs: 0,
  keyedFirstUntilMs: 0,
  unkeyedQuietUntilMs: 0,
  keyedOwed: false,
};

/** What one poll sends. */
export type KeyedClaimPlan =
  /** The unkeyed claim alone: no keyed row was live at the last look, and it is not time to look again. */
  | { kind: "unkeyed" }
  /** The keyed claim alone: the unkeyed claim is quiet (its last answer was empty, keyed rows live). */
  | { kind: "keyed" }
  /** The unkeyed claim, then the keyed one only if it found nothing (new work most likely has no key). */
  | { kind: "unkeyed-then-keyed-if-empty" }
  /** Both, `keyedFirst` deciding the order; the second only with room left. */
  | { kind: "both"; keyedFirst: boolean };

/** The plan of a poll at `now`, and the memory once it is chosen. */
export function planKeyedClaim(
  m: KeyedClaimMemory,
  now: number,
): { plan: KeyedClaimPlan; memory: KeyedClaimMemory } {
  if (!m.keyedLive && now < m.nextLookMs) return { plan: { kind: "unkeyed" }, memory: m };
  if (now < m.unkeyedQuietUntilMs) return { plan: { kind: "keyed" }, memory: m };
  if (!m.keyedLive && !m.keyedOwed) return { plan: { kind: "unkeyed-then-keyed-if-empty" }, memory: m };
  const keyedFirst = now < m.keyedFirstUntilMs || !m.keyedFirst;
  return { plan: { kind: "both", keyedFirst }, memory: { ...m, keyedFirst, keyedOwed: false } };
}

/** The memory after the unkeyed claim of `plan` returned `claimed` jobs of `asked`, at `now`. */
export function afterUnkeyedAnswer(
  m: KeyedClaimMemory,
  plan: KeyedClaimPlan,
  answer: { claimed: number; asked: number },
  now: number,
  recheckMs: number,
): KeyedClaimMemory {
  return {
    ...m,
    keyedFirstUntilMs: answer.claimed < answer.asked ? now + recheckMs : 0,
    unkeyedQuietUntilMs: answer.claimed === 0 && m.keyedLive ? now + recheckMs : 0,
    keyedOwed: m.keyedOwed || (plan.kind === "unkeyed-then-keyed-if-empty" && answer.claimed > 0),
  };
}

/** The memory after a keyed claim answered whether keyed rows are live, at `now`. */
export function afterKeyedAnswer(
  m: KeyedClaimMemory,
  keyedLive: boolean,
  now: number,
  recheckMs: number,
): KeyedClaimMemory {
  return { ...m, keyedLive, nextLookMs: keyedLive ? m.nextLookMs : now + recheckMs };
}

/**
 * The memory after a wakeup. New work may carry a key or none, so the next poll looks with both claims;
 * when the hint says it carries none (`unkeyed`), a node that saw no keyed row live keeps waiting for its
 * next look (`nextLookMs`), and only the unkeyed claim's holds end.
 */
export function afterKeyedWakeup(m: KeyedClaimMemory, unkeyed = false): KeyedClaimMemory {
  const unkeyedNow = { ...m, keyedFirstUntilMs: 0, unkeyedQuietUntilMs: 0 };
  return unkeyed ? unkeyedNow : { ...unkeyedNow, nextLookMs: 0 };
}

/** The memory when the node asks for a full pass (a freed key or permit): look at keyed rows at once. */
export function afterFullPassRequest(m: KeyedClaimMemory): KeyedClaimMemory {
  return { ...m, nextLookMs: 0, unkeyedQuietUntilMs: 0 };
}

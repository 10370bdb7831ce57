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
  /** The last keyed claim's answer: rows taken of rows asked (null before the first). */
  lastKeyed: { taken: number; asked: number } | null;
  /** The last unkeyed claim's answer: rows taken of rows asked (null before the first). */
  lastUnkeyed: { taken: number; asked: number } | null;
}

/** A node's memory before its first poll. */
export const initialKeyedClaimMemory: KeyedClaimMemory = {
  keyedLive: true,
  keyedFirst: false,
  nextLookMs: 0,
  keyedFirstUntilMs: 0,
  unkeyedQuietUntilMs: 0,
  keyedOwed: false,
  lastKeyed: null,
  lastUnkeyed: null,
};

/** What one poll sends. */
export type KeyedClaimPlan =
  /** The unkeyed claim alone: no keyed row was live at the last look, and it is not time to look again. */
  | { kind: "unkeyed" }
  /** The keyed claim alone: the unkeyed claim is quiet (its last answer was empty, keyed rows live). */
  | { kind: "keyed" }
  /** The unkeyed claim, then the keyed one only if it found nothing (new work most likely has no key). */
  | { kind: "unkeyed-then-keyed-if-empty" }
  /**
   * Both at once, on two connections, so neither waits behind the other (issue 44): the poll's room is
   * split between them ({@link splitRoom}); `keyedFirst` decides which gets the larger half and whose
   * jobs come first.
   */
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

/**
 * How a poll of `limit` rows that sends both claims at once splits its room: half each (`keyedFirst`'s
 * side takes the odd row), except that a side whose last answer was short (it took fewer than it asked:
 * it has no more claimable now) asks for at most twice what it took, at least 1, and the other side gets
 * the rest. So a node whose keys are all at their limit gives almost its whole room to unkeyed jobs, and
 * a key's freed slots are still looked at every poll. Never more than `limit` in all.
 */
export function splitRoom(
  m: KeyedClaimMemory,
  limit: number,
  keyedFirst: boolean,
): { keyed: number; unkeyed: number } {
  const cap = (last: { taken: number; asked: number } | null, share: number) =>
    last !== null && last.taken < last.asked ? Math.min(share, Math.max(1, 2 * last.taken)) : share;
  const keyedHalf = keyedFirst ? Math.ceil(limit / 2) : Math.floor(limit / 2);
  // No keyed row was live at the last look (a poll that looks again, as owed): one row tells.
  let keyed = m.keyedLive ? cap(m.lastKeyed, keyedHalf) : Math.min(keyedHalf, 1);
  let unkeyed = cap(m.lastUnkeyed, limit - keyedHalf);
  // What one side leaves goes to the other, unless that side is short too.
  if (keyed < keyedHalf) unkeyed = cap(m.lastUnkeyed, limit - keyed);
  else if (unkeyed < limit - keyedHalf) keyed = cap(m.lastKeyed, limit - unkeyed);
  return { keyed, unkeyed };
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
    lastUnkeyed: { taken: answer.claimed, asked: answer.asked },
  };
}

/**
 * The memory after a keyed claim answered whether keyed rows are live, at `now`, having taken
 * `answer.claimed` of `answer.asked` rows (null: it ran out of time, and says nothing about its rows).
 */
export function afterKeyedAnswer(
  m: KeyedClaimMemory,
  keyedLive: boolean,
  now: number,
  recheckMs: number,
  answer: { claimed: number; asked: number } | null = null,
): KeyedClaimMemory {
  return {
    ...m,
    keyedLive,
    nextLookMs: keyedLive ? m.nextLookMs : now + recheckMs,
    lastKeyed: answer === null ? m.lastKeyed : { taken: answer.claimed, asked: answer.asked },
  };
}

/**
 * The memory after a wakeup. New work may carry a key or none, so the next poll looks with both claims;
 * when the hint says it carries none (`unkeyed`), a node that saw no keyed row live keeps waiting for its
 * next look (`nextLookMs`), and only the unkeyed claim's holds end.
 */
export function afterKeyedWakeup(m: KeyedClaimMemory, unkeyed = false): KeyedClaimMemory {
  // New work may fill a side that came back short: its ask is no longer capped (splitRoom).
  const unkeyedNow = { ...m, keyedFirstUntilMs: 0, unkeyedQuietUntilMs: 0, lastUnkeyed: null };
  return unkeyed ? unkeyedNow : { ...unkeyedNow, nextLookMs: 0, lastKeyed: null };
}

/** The memory when the node asks for a full pass (a freed key or permit): look at keyed rows at once. */
export function afterFullPassRequest(m: KeyedClaimMemory): KeyedClaimMemory {
  return { ...m, nextLookMs: 0, unkeyedQuietUntilMs: 0, lastKeyed: null };
}

/**
 * Rate limits, the pure part: the configuration's rules, the names of the keys an attempt is admitted
 * under, and the node's memory of closed windows. The admission itself is the store's (an exact sliding
 * log in the database, src/store/cluster/rate-limit-sql.ts); what is decided here is what a node may conclude
 * without asking it, and when a refused job comes back.
 *
 * **The memory of a closed key.** The store answers a refusal with the window's next opening: the time
 * at which the oldest start in the window leaves it. Until then no admission of that key can succeed (the
 * log only grows until its starts expire), so a node that remembers the opening may refuse the key's
 * other jobs without a round trip, and be exactly as right as the store.
 *
 * **The spread.** Refused jobs must not all come back at the opening: a backlog of 1,000 jobs under 50 per
 * second would otherwise be claimed and refused 20 times over. The k-th job refused in one *episode* of a
 * key (since its first refusal, for as long as slots handed out are still ahead) comes back at
 * `base + floor(k / limit) * perMs + (k mod limit) * perMs / limit`: `limit` jobs per window, evenly over
 * it, in the order they were refused. Each node spreads its own refusals; n nodes with a backlog bring
 * back up to n times the limit per window, and the surplus is refused once more (a bounded cost, never a
 * loop: every refusal pushes its job at least to the next opening).
 */
import { ValidationError } from "../core/errors.js";
import { textProblem } from "../core/input-text.js";

/** The longest value a key function may return (characters). */
export const maxRateLimitKeyLength = 200;
/** The largest `limit`: the log holds up to this many rows per key. */
export const maxRateLimit = 100_000;
/** The longest window (ms): about 24.8 days (a timer's range). */
export const maxRatePerMs = 2 ** 31 - 1;

/** A rate limit as configured: at most `limit` attempts start in any window of `perMs`. */
export interface RateLimitOptions<P = unknown> {
  /** Attempts that may start in any window of `perMs`, across the cluster (1 to 100,000). */
  limit: number;
  /** The window (ms, 1 to 2^31 - 1). */
  perMs: number;
  /**
   * The key the limit counts under, from the payload (`(p) => p.tenantId`): one window per value. Jobs of
   * every type whose key function returns the same value share that window. Absent: one window per type.
   */
  key?: (payload: P) => string;
}

/** A validated rate limit. */
export interface RateLimit {
  limit: number;
  perMs: number;
  key: ((payload: unknown) => string) | undefined;
}

/** One key an attempt is admitted under, with its limit: what the store's admission takes. */
export interface RateKey {
  /** `type:<type>`, `queue:<queue>` or `key:<value>`. */
  key: string;
  limit: number;
  perMs: number;
}

/**
 * Validates a rate limit (`where` names it in the error: `rateLimit of mail.send`, `queueRateLimits.mail`).
 * `keyed`: whether a `key` function is allowed.
 *
 * @throws ValidationError `INVALID_OPTION` / `INVALID_CONFIG` naming the bad field.
 * @example
 * ```ts
 * resolveRateLimit("rateLimit of api.call", { limit: 100, perMs: 60_000 }, true, "INVALID_OPTION");
 * ```
 */
export function resolveRateLimit(
  where: string,
  value: unknown,
  keyed: boolean,
  code: "INVALID_OPTION" | "INVALID_CONFIG",
): RateLimit {
  const fail = (why: string): never => {
    throw new ValidationError(code, `${where}: ${why}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail("use { limit, perMs" + (keyed ? ", key? }" : " }"));
  }
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== "limit" && k !== "perMs" && !(keyed && k === "key")) fail(`unknown field ${JSON.stringify(k)}`);
  }
  const int = (name: string, v: unknown, max: number): number => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) {
      fail(`${name} must be an integer from 1 to ${max}, got ${describe(v)}`);
    }
    return v as number;
  };
  const limit = int("limit", o.limit, maxRateLimit);
  const perMs = int("perMs", o.perMs, maxRatePerMs);
  if (o.key !== undefined && typeof o.key !== "function") fail("key must be a function of the payload");
  return { limit, perMs, key: o.key as RateLimit["key"] };
}

function describe(v: unknown): string {
  if (typeof v === "number") return String(v);
  return v === undefined ? "undefined" : typeof v === "string" ? JSON.stringify(v) : typeof v;
}

/** The key of a type's own window. */
export const typeRateKey = (type: string): string => `type:${type}`;
/** The key of a queue's window. */
export const queueRateKey = (queue: string): string => `queue:${queue}`;

/**
 * The key a key function's result names, or a clear error for a value that cannot be one (not a string,
 * empty, longer than {@link maxRateLimitKeyLength}, or text PostgreSQL cannot store: a NUL, or half of a
 * surrogate pair from a cut through an emoji). Returned, not thrown: it costs that job alone, where a key
 * the store refused would fail its admission on every claim and bring the job back forever.
 */
export function namedRateKey(type: string, value: unknown): string | Error {
  if (typeof value !== "string" || value.length === 0 || value.length > maxRateLimitKeyLength) {
    return new TypeError(
      `the rateLimit key of ${type} returned ${describe(value)}${typeof value === "string" ? ` (${value.length} characters)` : ""}: ` +
        `it must return a string of 1 to ${maxRateLimitKeyLength} characters`,
    );
  }
  const problem = textProblem(value);
  if (problem !== null)
    return new TypeError(`the rateLimit key of ${type} returned ${describe(value)}: ${problem}`);
  return `key:${value}`;
}

/** What a node remembers of one key it was refused: the opening, and its episode's spread. */
export interface ClosedKey {
  /** When the window has room again, by the store's last answer (node clock ms). */
  openAt: number;
  /** Where the episode's spread starts (node clock ms). */
  base: number;
  /** Jobs refused in the episode so far. */
  refused: number;
}

/** When the k-th job refused in an episode that starts at `base` comes back (node clock ms). */
export function spreadAt(base: number, k: number, limit: number, perMs: number): number {
  return base + Math.floor(k / limit) * perMs + Math.floor(((k % limit) * perMs) / limit);
}

/** A refusal: when the job comes back, and what to remember of its key. */
export interface Refusal {
  retryAt: number;
  memory: ClosedKey;
}

/**
 * The node's own decision for a key it remembers: a refusal while the store's opening is ahead, null
 * when the store must be asked (nothing remembered, or the opening has passed).
 */
export function refuseLocally(
  m: ClosedKey | undefined,
  now: number,
  limit: number,
  perMs: number,
): Refusal | null {
  if (m === undefined || now >= m.openAt) return null;
  const retryAt = Math.max(spreadAt(m.base, m.refused, limit, perMs), m.openAt);
  return { retryAt, memory: { ...m, refused: m.refused + 1 } };
}

/**
 * Records the store's refusal (the window opens `openInMs` from `now`). An episode whose handed-out slots
 * are still ahead goes on counting, so a new refusal queues behind the jobs already sent away; otherwise
 * a new episode starts at the opening.
 */
export function afterStoreRefusal(
  m: ClosedKey | undefined,
  now: number,
  openInMs: number,
  limit: number,
  perMs: number,
): Refusal {
  const openAt = now + Math.max(0, openInMs);
  const live = m !== undefined && spreadAt(m.base, m.refused, limit, perMs) > now;
  const base = live ? m.base : openAt;
  const refused = live ? m.refused : 0;
  const retryAt = Math.max(spreadAt(base, refused, limit, perMs), openAt);
  return { retryAt, memory: { openAt, base, refused: refused + 1 } };
}

/** Whether a remembered key can be forgotten: its opening and every slot it handed out are past. */
export function forgettable(m: ClosedKey, now: number, limit: number, perMs: number): boolean {
  return now >= m.openAt && spreadAt(m.base, m.refused, limit, perMs) <= now;
}

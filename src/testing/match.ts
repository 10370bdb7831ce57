/**
 * Payload matching for assertEnqueued(): a predicate, or a pattern compared as a subset. A pattern object
 * matches a payload that has at least its keys, each matching recursively; arrays match element by element
 * and must have the same length; anything else is compared with Object.is.
 */

/** A pattern the payload must contain (see the file header). */
export type PayloadPattern =
  { [key: string]: unknown } | readonly unknown[] | string | number | boolean | null;

/** A payload pattern (a subset of the payload) or a predicate over the payload. */
export type PayloadMatcher<P = unknown> = PayloadPattern | ((payload: P) => boolean);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether `payload` matches `pattern` (see the file header). */
export function matchesPattern(payload: unknown, pattern: unknown): boolean {
  if (Array.isArray(pattern)) {
    return (
      Array.isArray(payload) &&
      payload.length === pattern.length &&
      pattern.every((p, i) => matchesPattern(payload[i], p))
    );
  }
  if (isPlainObject(pattern)) {
    return (
      isPlainObject(payload) &&
      Object.entries(pattern).every(([k, p]) => Object.hasOwn(payload, k) && matchesPattern(payload[k], p))
    );
  }
  return Object.is(payload, pattern);
}

/** Applies a matcher: a function is called, anything else is a pattern; `undefined` matches everything. */
export function matches<P>(payload: unknown, matcher: PayloadMatcher<P> | undefined): boolean {
  if (matcher === undefined) return true;
  if (typeof matcher === "function") return Boolean(matcher(payload as P));
  return matchesPattern(payload, matcher);
}

/** A short description of a matcher for assertion messages. */
export function describeMatcher<P>(matcher: PayloadMatcher<P> | undefined): string {
  if (matcher === undefined) return "any payload";
  if (typeof matcher === "function") return `a payload accepted by ${matcher.name || "the predicate"}`;
  return `a payload matching ${JSON.stringify(matcher)}`;
}

/**
 * The sanitized view of a machine's context that inspection shows (`getJob(id).machine.context`, `pawl
 * job <id>`, the console): JSON only, bounded, and without the values of keys that look like secrets. A
 * context may hold anything the user put there (tokens, large documents, actor references); the view must
 * be safe to print and cheap to send, and it is never read back into the machine.
 */

/** How much of a context the view keeps. */
export interface ContextViewLimits {
  /** Nesting kept; deeper values read "[…]". */
  maxDepth: number;
  /** Characters kept of a string (the rest is cut, with "…" appended). */
  maxString: number;
  /** Items kept of an array and keys of an object (a final "…" entry says how many were left out). */
  maxItems: number;
}

/** The default limits: 6 levels, 200 characters per string, 50 items per array or object. */
export const defaultContextViewLimits: ContextViewLimits = { maxDepth: 6, maxString: 200, maxItems: 50 };

/** Keys whose values are never shown. */
const secretKey =
  /pass(word|wd)?|secret|token|api[-_]?key|authori[sz]ation|credential|cookie|private[-_]?key/i;

/** What replaces a secret key's value. */
export const redacted = "[redacted]";

function view(value: unknown, depth: number, limits: ContextViewLimits, seen: Set<object>): unknown {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "string") {
    return value.length > limits.maxString ? `${value.slice(0, limits.maxString)}…` : value;
  }
  if (typeof value === "bigint") return `${value.toString()}n`;
  if (typeof value !== "object") return `[${typeof value}]`; // undefined, function, symbol
  if (seen.has(value)) return "[circular]";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "[invalid date]" : value.toISOString();
  // An actor reference (xstate puts spawned actors in context) is shown by its id, never walked.
  if ("sessionId" in value && "send" in value) return `[actor ${String((value as { id?: unknown }).id)}]`;
  if (depth >= limits.maxDepth) return "[…]";
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const out = value.slice(0, limits.maxItems).map((v) => view(v, depth + 1, limits, seen));
      if (value.length > limits.maxItems) out.push(`… ${value.length - limits.maxItems} more`);
      return out;
    }
    const out: Record<string, unknown> = {};
    const entries = Object.entries(value);
    for (const [key, v] of entries.slice(0, limits.maxItems)) {
      out[key] = secretKey.test(key) ? redacted : view(v, depth + 1, limits, seen);
    }
    if (entries.length > limits.maxItems) out["…"] = `${entries.length - limits.maxItems} more keys`;
    return out;
  } catch {
    return "[unreadable]"; // a getter or Proxy trap that throws
  } finally {
    seen.delete(value);
  }
}

/**
 * The sanitized, bounded JSON view of a machine's context.
 *
 * @example
 * ```ts
 * sanitizedContext({ orderId: "o-1", apiToken: "sk_live_x", items: [1, 2] });
 * // { orderId: "o-1", apiToken: "[redacted]", items: [1, 2] }
 * ```
 */
export function sanitizedContext(
  value: unknown,
  limits: ContextViewLimits = defaultContextViewLimits,
): unknown {
  return view(value, 0, limits, new Set());
}

/**
 * Safe JSON for debug views: turns anything (xstate inspection events, snapshots, contexts) into plain
 * JSON that is bounded in depth and size, has no functions, no cycles and no actor internals, and (unless
 * asked) no job payloads or results. The inspector serialises every streamed event through it.
 */
import { redactText } from "../src/core/redact.js";
import type { InspectionEvent } from "xstate";

/** Options of {@link sanitize}. */
export interface SanitizeOptions {
  /** Keep values under payload-like keys (`payload`, `result`, `resultJson`). Default false. */
  includePayloads?: boolean;
  /** Nesting deeper than this becomes `"[Object]"` / `"[Array]"`. Default 6. */
  maxDepth?: number;
  /** Arrays keep this many items (then a `"... N more"` marker). Default 50. */
  maxItems?: number;
  /** Objects keep this many keys. Default 50. */
  maxKeys?: number;
  /** Strings are cut to this many characters. Default 500. */
  maxString?: number;
}

/** Keys whose values may hold user data (job payloads, handler results). */
const payloadKeys = new Set(["payload", "result", "resultJson"]);

/** The placeholder for a value left out. */
export const redacted = "[redacted]";

interface Limits {
  includePayloads: boolean;
  maxDepth: number;
  maxItems: number;
  maxKeys: number;
  maxString: number;
}

function limits(o: SanitizeOptions): Limits {
  return {
    includePayloads: o.includePayloads ?? false,
    maxDepth: o.maxDepth ?? 6,
    maxItems: o.maxItems ?? 50,
    maxKeys: o.maxKeys ?? 50,
    maxString: o.maxString ?? 500,
  };
}

/** Whether a value is an xstate actor reference (shown by its id, never walked). */
function isActorRef(v: object): v is { id: string; systemId?: string; sessionId: string } {
  const r = v as { sessionId?: unknown; send?: unknown; id?: unknown };
  return typeof r.sessionId === "string" && typeof r.send === "function" && typeof r.id === "string";
}

/** The id an actor is known by: its system id (`slot-3`, `poller`) or, failing that, its local id. */
export function actorId(ref: unknown): string | null {
  if (typeof ref !== "object" || ref === null) return null;
  const r = ref as { systemId?: unknown; id?: unknown };
  if (typeof r.systemId === "string") return r.systemId;
  return typeof r.id === "string" ? r.id : null;
}

/**
 * Returns a JSON-safe copy of `value` within the limits.
 *
 * @example
 * ```ts
 * const a: Record<string, unknown> = { payload: { card: "4111" }, fn: () => 1 };
 * a.self = a;
 * sanitize(a); // { payload: "[redacted]", self: "[Circular]" }
 * ```
 */
export function sanitize(value: unknown, options: SanitizeOptions = {}): unknown {
  return walk(value, limits(options), 0, []);
}

function walk(v: unknown, l: Limits, depth: number, path: object[]): unknown {
  switch (typeof v) {
    case "string":
      // Cut first (bounded work), then strip connection URLs' passwords (an error text can quote one).
      return redactText(v.length > l.maxString ? `${v.slice(0, l.maxString)}...` : v);
    case "number":
      return Number.isFinite(v) ? v : String(v);
    case "boolean":
      return v;
    case "bigint":
      return v.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (v === null) return null;
  const o = v as object;
  if (path.includes(o)) return "[Circular]";
  if (o instanceof Date) return Number.isNaN(o.getTime()) ? null : o.toISOString();
  if (o instanceof Error) return { name: o.name, message: walk(o.message, l, depth + 1, path) };
  if (isActorRef(o)) return { actor: actorId(o) };
  if (depth >= l.maxDepth) return Array.isArray(o) ? "[Array]" : "[Object]";
  path.push(o);
  try {
    if (Array.isArray(o) || o instanceof Set) {
      const items = [...(o as Iterable<unknown>)];
      const out = items.slice(0, l.maxItems).map((x) => walk(x, l, depth + 1, path) ?? null);
      if (items.length > l.maxItems) out.push(`... ${items.length - l.maxItems} more`);
      return out;
    }
    const entries: [string, unknown][] =
      o instanceof Map ? [...o.entries()].map(([k, x]) => [String(k), x]) : Object.entries(o);
    const out: Record<string, unknown> = {};
    let kept = 0;
    for (const [k, x] of entries) {
      if (kept >= l.maxKeys) {
        out["..."] = `${entries.length - kept} more keys`;
        break;
      }
      const safe =
        !l.includePayloads && payloadKeys.has(k) && x !== undefined && x !== null
          ? redacted
          : walk(x, l, depth + 1, path);
      if (safe === undefined) continue;
      out[k] = safe;
      kept++;
    }
    return out;
  } finally {
    path.pop();
  }
}

/** The inspection event kinds the stream carries (the part after `@xstate.`). */
export const inspectionKinds = ["actor", "event", "snapshot", "action", "microstep"] as const;

/** One of {@link inspectionKinds}. */
export type InspectionKind = (typeof inspectionKinds)[number];

/** One streamed inspection event, as JSON. */
export interface StreamedInspectionEvent {
  /** The xstate inspection type, e.g. `@xstate.event`. */
  type: string;
  /** ms since the epoch when the event was seen. */
  at: number;
  /** The actor concerned: the snapshot's owner, the event's target, the registered actor. */
  actor: string | null;
  /** For `@xstate.event`: the sender, when known. */
  source?: string | null;
  /** The event (sanitised) for event, snapshot and microstep inspections. */
  event?: unknown;
  /** For snapshots and microsteps: state value, status and sanitised context. */
  snapshot?: SanitizedSnapshot;
  /** For `@xstate.action`: the action's type and (sanitised) params. */
  action?: unknown;
}

/** Turns an xstate inspection event into a small JSON-safe record. */
export function serializeInspectionEvent(
  e: InspectionEvent,
  options: SanitizeOptions = {},
): StreamedInspectionEvent {
  const out: StreamedInspectionEvent = { type: e.type, at: Date.now(), actor: actorId(e.actorRef) };
  switch (e.type) {
    case "@xstate.event":
      out.source = actorId(e.sourceRef);
      out.event = sanitize(e.event, options);
      break;
    case "@xstate.snapshot":
    case "@xstate.microstep":
      out.event = sanitize(e.event, options);
      out.snapshot = sanitizeSnapshot(e.snapshot, options);
      break;
    case "@xstate.action":
      out.action = sanitize(e.action, options);
      break;
  }
  return out;
}

/** The part of an actor's snapshot the debug views show: its state value, status and context, sanitised. */
export interface SanitizedSnapshot {
  value: unknown;
  status: unknown;
  context: unknown;
}

/**
 * An actor snapshot as the SSE stream and the Stately bridge show it: value, status and context through
 * {@link sanitize}; the rest (children, output, error, history) is left out.
 */
export function sanitizeSnapshot(snapshot: unknown, options: SanitizeOptions = {}): SanitizedSnapshot {
  const s = (typeof snapshot === "object" && snapshot !== null ? snapshot : {}) as {
    value?: unknown;
    status?: unknown;
    context?: unknown;
  };
  return {
    value: sanitize(s.value, options) ?? null,
    status: sanitize(s.status, options) ?? null,
    context: sanitize(s.context, options) ?? null,
  };
}

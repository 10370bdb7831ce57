/**
 * The node's batched internals as spans, with `tracing: { internals: true }` (off by default: a busy node
 * claims many times a second). Each is a root span of kind INTERNAL, not part of any job's trace, since
 * one claim or flush serves many jobs:
 * - `pawl claim`: one claim statement (from the `claim` event: its duration, jobs claimed, limit);
 * - `pawl wakeup`: a wakeup of the poller (local enqueue or a coordinator hint), zero length;
 * - `pawl complete` / `pawl retry` / `pawl kill` / `pawl reschedule`: one batched outcome write.
 * Claims and wakeups come from the event stream (as metrics do); outcome writes from a view of the store.
 */
import type { Attributes, Span } from "@opentelemetry/api";
import type { PawlEventEmitter } from "../core/events.js";
import type { NodeStore } from "../store/job-store.js";
import type { PawlTracing } from "../tracing/pawl-tracing.js";
import { endSpan, recordError } from "../tracing/span-error.js";

/** `pawl.batch.size`: the jobs one claim or outcome write handled. */
export const BATCH_SIZE = "pawl.batch.size";

function internalSpan(tracing: PawlTracing, name: string, attributes: Attributes, startTime?: number) {
  const api = tracing.api;
  const tracer = tracing.tracer();
  if (!api || !tracer) return null;
  return tracer.startSpan(
    name,
    { kind: api.SpanKind.INTERNAL, attributes, root: true, ...(startTime ? { startTime } : {}) },
    api.ROOT_CONTEXT,
  );
}

/** Subscribes spans for claims and wakeups to `events`; returns the unsubscribe function. */
export function traceInternals(tracing: PawlTracing, events: PawlEventEmitter): () => void {
  const offClaim = events.on("claim", (e) => {
    try {
      const now = Date.now();
      internalSpan(
        tracing,
        "pawl claim",
        { [BATCH_SIZE]: e.jobs.length, "pawl.claim.limit": e.limit },
        now - e.durationMs,
      )?.end(now);
    } catch {
      // tracing never costs the node
    }
  });
  const offWakeup = events.on("wakeup", (e) => {
    try {
      const attributes: Attributes = { "pawl.wakeup.source": e.source };
      if (e.hint) attributes["pawl.wakeup.hint"] = e.hint.kind;
      internalSpan(tracing, "pawl wakeup", attributes)?.end();
    } catch {
      // tracing never costs the node
    }
  });
  return () => {
    offClaim();
    offWakeup();
  };
}

const outcomeWrites = ["complete", "retry", "kill", "reschedule"] as const;

/**
 * `store` with each batched outcome write in a span (the node's outcome writer calls these); everything
 * else is the store itself (its prototype).
 */
export function traceOutcomeWrites(tracing: PawlTracing, store: NodeStore): NodeStore {
  const view = Object.create(store) as NodeStore;
  for (const name of outcomeWrites) {
    const write = store[name] as (nodeId: string, items: readonly unknown[]) => Promise<unknown>;
    Object.defineProperty(view, name, {
      value: async (nodeId: string, items: readonly unknown[]) => {
        let span: Span | null = null;
        try {
          span = internalSpan(tracing, `pawl ${name}`, { [BATCH_SIZE]: items.length });
        } catch {
          span = null;
        }
        try {
          return await write.call(store, nodeId, items);
        } catch (error) {
          if (span) recordError(span, error);
          throw error;
        } finally {
          if (span) endSpan(span); // never replaces the write's own result
        }
      },
    });
  }
  return view;
}

/**
 * The handler's side of composition, behind `ctx.waitForSignal()`, `ctx.receivedSignal()` and
 * `ctx.flow()`. One read of the job's row per attempt (on first use, never on the hot path of jobs that do
 * not ask) gives the delivered signal and the flow view.
 *
 * A run's signal: when `pawl.signal()` (or the wait's timeout) made the job runnable, the outcome stays on
 * the row until the job parks again, so every attempt of that run sees it (a retry after a failure too).
 * The first `waitForSignal()` of an attempt returns it; any later call in the same attempt, or any call
 * when nothing was delivered, parks the job (throws {@link WaitForSignal}) and clears it.
 */
import { ValidationError } from "../core/errors.js";
import type { FlowKind, JobCompositionRow } from "../store/composition/flow-sql.js";
import { WaitForSignal } from "./errors.js";
import type { JobContextServices } from "./signals.js";

/** What a wait ended with: a signal's payload, or the timeout. */
export type SignalDelivery<P = unknown> =
  { timedOut: false; payload: P; at: Date } | { timedOut: true; at: Date };

/** Options of `ctx.waitForSignal()`. */
export interface WaitForSignalOptions {
  /** How long the job may wait (ms); without it, the job waits until a signal comes. */
  timeoutMs?: number;
}

/** A flow member's view of its flow (`ctx.flow()`). */
export interface FlowContext {
  flowId: string;
  kind: FlowKind;
  /** This job's name in the flow (null for the flow's completion job). */
  step: string | null;
  /** The results of the dependencies that SUCCEEDED, by step name. */
  results: Record<string, unknown>;
  /** Dependencies that ended DEAD or CANCELED (a workflow with the `continue` policy runs on anyway). */
  failed: Record<string, "DEAD" | "CANCELED">;
  /** In a chain: the previous step's result (undefined for the first step). */
  previous: unknown;
}

const maxWaitMs = 2_147_483_647 * 1000;

/** Validates waitForSignal's options. @throws ValidationError `INVALID_OPTION`. */
export function waitTimeout(options: WaitForSignalOptions | undefined): number | null {
  const t = options?.timeoutMs;
  if (t === undefined) return null;
  if (typeof t !== "number" || !Number.isFinite(t) || t < 1 || t > maxWaitMs) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid timeoutMs ${JSON.stringify(t)}: use a number of ms >= 1`,
    );
  }
  return Math.round(t);
}

/** Maps the composition row to the delivery it holds, if any. */
export function deliveryOf<P>(row: JobCompositionRow | null): SignalDelivery<P> | null {
  if (!row || (row.signal_state !== "delivered" && row.signal_state !== "timeout")) return null;
  const at = row.signaled_at ?? new Date(0);
  return row.signal_state === "timeout"
    ? { timedOut: true, at }
    : { timedOut: false, payload: row.signal_payload as P, at };
}

/** Maps the composition row to the flow view, if the job is in a flow. */
export function flowOf(row: JobCompositionRow | null): FlowContext | null {
  if (!row || row.flow_id === null || row.kind === null) return null;
  const results: Record<string, unknown> = {};
  const failed: Record<string, "DEAD" | "CANCELED"> = {};
  for (const [step, v] of Object.entries(row.flow_inputs ?? {})) {
    if (v.status === "SUCCEEDED") results[step] = v.result ?? null;
    else failed[step] = v.status as "DEAD" | "CANCELED";
  }
  const values = Object.values(results);
  return {
    flowId: row.flow_id,
    kind: row.kind,
    step: row.flow_step,
    results,
    failed,
    previous: row.kind === "chain" && values.length === 1 ? values[0] : undefined,
  };
}

/** One attempt's composition state (a JobContext creates it on first use). */
export class JobComposition {
  private row: Promise<JobCompositionRow | null> | null = null;
  private consumed = false;

  constructor(
    private readonly jobId: string,
    private readonly services: JobContextServices | undefined,
  ) {}

  private load(): Promise<JobCompositionRow | null> {
    this.row ??= this.services?.read ? this.services.read(this.jobId) : Promise.resolve(null);
    return this.row;
  }

  /** See JobContext.waitForSignal. */
  async waitForSignal<P>(options?: WaitForSignalOptions): Promise<SignalDelivery<P>> {
    const timeoutMs = waitTimeout(options);
    if (!this.consumed) {
      this.consumed = true;
      const delivered = deliveryOf<P>(await this.load());
      if (delivered) return delivered;
    }
    throw new WaitForSignal(timeoutMs);
  }

  /** See JobContext.receivedSignal. */
  async receivedSignal<P>(): Promise<SignalDelivery<P> | null> {
    return deliveryOf<P>(await this.load());
  }

  /** See JobContext.flow. */
  async flow(): Promise<FlowContext | null> {
    return flowOf(await this.load());
  }
}

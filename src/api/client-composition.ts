/**
 * The composition operations of `PawlClient` (./client.ts): flows (chain, batch, workflow, their reads and
 * cancelFlow), signals and pauses. Each is one call into src/composition with the client's
 * {@link CompositionDeps}, so the group is one concept with one destination; it is a base class the client
 * extends so that client.ts keeps enqueue, reads, waitFor and the lifecycle, while these stay methods of
 * every PawlClient (and Pawl) exactly as before.
 */
import type { CompositionDeps } from "../composition/deps.js";
import type { WriteAction } from "./write-grant.js";
import type { BatchInput, ChainStep, FlowOptions, WorkflowInput } from "../composition/flow-input.js";
import {
  cancelFlow,
  createBatch,
  createChain,
  createWorkflow,
  getFlow,
  listFlows,
} from "../composition/flows.js";
import type { Flow, FlowDetail, FlowHandle } from "../composition/flows.js";
import { signalJob, type SignalOptions, type SignalResult } from "../composition/signals.js";
import { sendToMachine, type SendResult } from "../composition/machine-send.js";
import type { MachineStore } from "../store/machines/machine-store.js";
import {
  listPaused,
  pauseJob,
  pauseJobType,
  pauseQueue,
  resumeJob,
  resumeJobType,
  resumeQueue,
} from "../composition/pause.js";
import type { Pause, PauseResult } from "../composition/pause.js";
import { validateFlowListFilter, validateFlowMemberLimit } from "../input/filter-input.js";
import { validateCancelReason } from "../store/jobs/cancel-job.js";
import type { FlowListFilter } from "../store/composition/flow-sql.js";
import type { Job } from "../store/jobs/job-row.js";
import type { IsTyped, PawlTasks, TaskName, TaskPayload } from "../input/task-map.js";

/** The flow, signal and pause methods of `PawlClient`, over what its `composition` getter supplies. */
export abstract class ClientComposition<Tasks extends object = PawlTasks> {
  /** @internal What the composition operations (src/composition) need; checks the instance is open. */
  protected abstract get composition(): CompositionDeps;
  /** Runs an operator's write, naming the grant when the role may not (./write-grant.ts). */
  protected abstract readonly writeAction: WriteAction;

  /** @internal The durable machines' statements on this instance's schema. */
  protected abstract get machines(): MachineStore;

  /**
   * Enqueues a chain: each step is made runnable only once the previous one SUCCEEDED; a step that ends
   * DEAD or CANCELED stops the chain (every later step is CANCELED with the reason). A step reads its
   * predecessor's result with `(await ctx.flow())?.previous`. All of it is in the store: safe across nodes,
   * exactly once. `options.onComplete` runs once every step is terminal, with the counts.
   *
   * @throws ValidationError for a bad step (nothing is written then).
   * @example
   * ```ts
   * const { flowId } = await pawl.chain([
   *   { type: "video.download", payload: { url } },
   *   { type: "video.transcode" },
   *   { type: "video.publish", priority: "high" },
   * ]);
   * ```
   */
  async chain(steps: readonly ChainStep<Tasks>[], options?: FlowOptions<Tasks>): Promise<FlowHandle> {
    return createChain(this.composition, steps, options);
  }

  /**
   * Enqueues a batch: one child job per item (inserted in bulk: 100,000 children take a few statements),
   * with progress counters in the store, and `onComplete` enqueued exactly once when every child is
   * terminal, its payload a `FlowCompletion` with the succeeded / dead / canceled counts. Wakes the
   * other nodes like an immediate enqueue.
   *
   * @throws ValidationError for a bad item or option (nothing is written then).
   * @example
   * ```ts
   * await pawl.batch({ type: "import.row", items: rows, onComplete: { type: "import.done", payload: { file } } });
   * ```
   */
  async batch<P = unknown, K extends TaskName<Tasks> = TaskName<Tasks>>(
    input: BatchInput<IsTyped<Tasks> extends true ? TaskPayload<Tasks, K> : P, K, Tasks>,
  ): Promise<FlowHandle> {
    return createBatch(this.composition, input);
  }

  /**
   * Enqueues a workflow: a DAG of named jobs with `dependsOn`. A job runs once all its dependencies
   * SUCCEEDED; `failurePolicy` decides what a DEAD or CANCELED job does to its dependents (`stop-dependents`,
   * the default, cancels them; `continue` runs them with the failure recorded in `ctx.flow()`).
   *
   * @throws ValidationError `INVALID_FLOW` for a cycle, an unknown or duplicate name (nothing is written).
   * @example
   * ```ts
   * await pawl.workflow({
   *   jobs: [
   *     { name: "a", type: "extract" },
   *     { name: "b", type: "transform", dependsOn: ["a"] },
   *     { name: "c", type: "enrich", dependsOn: ["a"] },
   *     { name: "d", type: "load", dependsOn: ["b", "c"] },
   *   ],
   * });
   * ```
   */
  async workflow(input: WorkflowInput<Tasks>): Promise<FlowHandle> {
    return createWorkflow(this.composition, input);
  }

  /** A flow with its counters and its first `memberLimit` members (default 1000); null when there is none. */
  async getFlow(id: string, memberLimit?: number): Promise<FlowDetail | null> {
    return getFlow(this.composition, id, validateFlowMemberLimit(memberLimit));
  }

  /** Flows, newest first (`{ kind, state: "running" | "completed", limit }`). */
  async listFlows(filter?: FlowListFilter): Promise<Flow[]> {
    return listFlows(this.composition, validateFlowListFilter(filter));
  }

  /**
   * Cancels a flow's members that have not started (and its completion job); running ones finish.
   * Returns how many jobs were canceled. @throws FlowNotFoundError.
   */
  async cancelFlow(id: string, reason?: string): Promise<number> {
    return cancelFlow(this.composition, id, reason === undefined ? undefined : validateCancelReason(reason));
  }

  /**
   * Delivers a signal to a job parked by `ctx.waitForSignal()`: it becomes PENDING, and its next run, on any
   * node, receives `payload`. With `{ name }`, the signal of a durable wait (`ctx.waitForSignal(name)`,
   * docs/durable.md): kept for a live job whether or not it waits yet (status `STORED` until it does),
   * never refused for being early; only a finished job refuses it.
   *
   * @throws JobNotFoundError for an unknown id; JobNotWaitingError (code `NOT_WAITING`, with the job's
   *   `status`) when the job is not parked for a signal (finished, not at its wait yet, waiting for a flow).
   * @example
   * ```ts
   * await pawl.signal(jobId, { approved: true });
   * ```
   */
  async signal(jobId: string, payload?: unknown, options?: SignalOptions): Promise<SignalResult> {
    return signalJob(this.composition, jobId, payload, options);
  }

  /**
   * Sends an event to a durable machine (a job of a type registered with `registerMachine`), from any
   * process. Resolves once the event is committed: it is then delivered exactly once, after the events
   * whose sends committed before it, by whichever node runs the machine next (a parked machine is woken).
   * An event the machine's current state does not accept is recorded as ignored, as xstate ignores it: it
   * is not an error here.
   *
   * @throws ValidationError `INVALID_PAYLOAD` for an event that is not an object with a string `type` (or
   *   names an `xstate.` event); JobNotFoundError for an unknown job; NotAMachineError (code
   *   `NOT_A_MACHINE`) for a job no started node runs as a machine; MachineFinishedError (code
   *   `MACHINE_FINISHED`) when the machine has ended. Nothing is stored then.
   * @example
   * ```ts
   * const order = await pawl.enqueue("order", { orderId: "o-1", amount: 42 });
   * await pawl.send(order.id, { type: "PAY", paymentId: "p-9" });
   * ```
   */
  async send(jobId: string, event: { type: string; [key: string]: unknown }): Promise<SendResult> {
    return sendToMachine(this.composition, this.machines, jobId, event);
  }

  /** Pauses a PENDING job: PAUSED, never claimed until {@link resumeJob}. @throws JobStateError otherwise. */
  async pauseJob(id: string): Promise<Job> {
    return this.writeAction("pausing a job", () => pauseJob(this.composition, id));
  }

  /** Resumes a job paused by {@link pauseJob} (PENDING again, unless its queue or type is paused). */
  async resumeJob(id: string): Promise<Job> {
    return this.writeAction("resuming a job", () => resumeJob(this.composition, id));
  }

  /**
   * Pauses a queue across the cluster: its PENDING jobs become PAUSED, and so does every job of it that
   * becomes PENDING later (enqueue, retry...), until {@link resumeQueue}. No node claims them meanwhile.
   * Needs the role that owns pawl's tables (it creates a trigger while any pause exists).
   *
   * @example
   * ```ts
   * await pawl.pauseQueue("mail"); // the SMTP provider is down
   * await pawl.resumeQueue("mail");
   * ```
   */
  async pauseQueue(name: string): Promise<PauseResult> {
    return pauseQueue(this.composition, name);
  }

  /** Resumes a paused queue: the jobs its pause held are PENDING again (unless their type is paused). */
  async resumeQueue(name: string): Promise<PauseResult> {
    return resumeQueue(this.composition, name);
  }

  /** Pauses a job type across the cluster, like {@link pauseQueue}. */
  async pauseJobType(type: string): Promise<PauseResult> {
    return pauseJobType(this.composition, type);
  }

  /** Resumes a paused job type. */
  async resumeJobType(type: string): Promise<PauseResult> {
    return resumeJobType(this.composition, type);
  }

  /** Every paused queue and job type, with the jobs each holds. */
  async listPaused(): Promise<Pause[]> {
    return listPaused(this.composition);
  }
}

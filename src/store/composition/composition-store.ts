/**
 * The composition concepts of the store gateway (src/store/job-store.ts): flows (chains, batches,
 * workflows), signals, and pauses. Kept in their own file so the gateway reads by concept; the SQL behind
 * each method is in flow-sql.ts, signal-sql.ts and pause-sql.ts.
 */
import type { NewJob } from "../../input/enqueue-input.js";
import type { Job } from "../jobs/job-row.js";
import type {
  FlowFailurePolicy,
  FlowKind,
  FlowListFilter,
  FlowMemberInsert,
  FlowRow,
  JobCompositionRow,
} from "./flow-sql.js";
import type { JobPauseResult, PauseChange, PauseKind, PauseRow } from "./pause-sql.js";
import type { DeliverResult, Park, TimedOutWaits } from "./signal-sql.js";

/** Flows: their rows, their members, and a member's view of its flow. */
export interface FlowStore {
  /** Inserts a flow row; returns its id. */
  insertFlow(f: {
    kind: FlowKind;
    name: string | null;
    policy: FlowFailurePolicy;
    total: number;
  }): Promise<string>;
  /** Takes `n` job ids from the jobs' sequence (members reference each other before they exist). */
  allocateJobIds(n: number): Promise<string[]>;
  /** Inserts chain or workflow members (PENDING without dependencies, else WAITING), in input order. */
  insertFlowMembers(flowId: string, members: readonly FlowMemberInsert[]): Promise<Job[]>;
  /** Inserts one chunk of a batch's children (payloads as JSON text, `offset` numbers them); returns how many. */
  insertBatchChildren(
    flowId: string,
    shared: NewJob,
    payloads: readonly string[],
    offset: number,
  ): Promise<number>;
  /** Inserts a flow's completion job (WAITING until the flow ends). */
  insertCompletionJob(flowId: string, job: NewJob): Promise<Job>;
  /** Reads a flow row (null when there is none). */
  readFlow(id: string): Promise<FlowRow | null>;
  /** Lists flow rows, newest first. */
  listFlowRows(filter?: FlowListFilter): Promise<FlowRow[]>;
  /** The first `limit` members of a flow. */
  flowMembers(flowId: string, limit: number): Promise<Job[]>;
  /** Cancels a flow's members that have not started; returns how many. */
  cancelFlowMembers(flowId: string, reason: string): Promise<number>;
  /** What a running job's context reads about its flow and its signal (null when there is no such job). */
  readComposition(jobId: string): Promise<JobCompositionRow | null>;
}

/** Signals: parking a job until one arrives, delivering it, timing waits out. */
export interface SignalStore {
  /** Parks RUNNING jobs of `nodeId` (WAITING for a signal); returns the ids that were still held. */
  park(nodeId: string, items: readonly Park[]): Promise<Set<string>>;
  /** Delivers a signal's payload (JSON text) to a parked job, making it PENDING. */
  deliverSignal(id: string, payloadJson: string): Promise<DeliverResult>;
  /** Times out up to `limit` parked jobs whose deadline passed. */
  timeOutWaits(limit: number): Promise<TimedOutWaits>;
  /** Milliseconds until the next parked job's deadline; null when none has one. */
  nextWaitDeadlineMs(): Promise<number | null>;
}

/** Pauses of queues, job types and single jobs. */
export interface PauseStore {
  /** Creates a pause rule (in a transaction: it locks the job table); PENDING rows it covers become PAUSED. */
  pauseRule(kind: PauseKind, name: string, by: string): Promise<PauseChange>;
  /** Removes a pause rule; the rows no other pause holds go back to PENDING. */
  resumeRule(kind: PauseKind, name: string): Promise<PauseChange>;
  /** Every pause rule. */
  listPauses(): Promise<PauseRow[]>;
  /** Pauses one PENDING job. */
  pauseJob(id: string): Promise<JobPauseResult>;
  /** Resumes one job paused by itself. */
  resumeJob(id: string): Promise<JobPauseResult>;
}

/**
 * The seam between a {@link PawlClient} and the node it may belong to. A client only writes and reads
 * rows; what an enqueue or a cancel means for running work (wake this node's poller, tell the other nodes,
 * apply a registered type's defaults) is the node's business. The node hands the client these hooks, with
 * the configuration it resolved, as one object at construction (see `ClientNode`), so the client never
 * learns about runtimes or coordinators and its hooks never change after construction. A bare client has
 * none: its enqueues are announced to nobody, and the other nodes find them by polling.
 */
import type { FoldedNotify } from "../../coordinators/spi.js";
import type { ResolvedConfig } from "../input/config.js";
import type { NewJob, TypeDefaults } from "../input/enqueue-input.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { CancelResult } from "../store/jobs/cancel-job.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { Queryable } from "../db/sql.js";

/** What an enqueue tells {@link ClientHooks.afterEnqueue} besides its rows. */
export interface AfterEnqueue {
  /** The insert statement carried the notify already (nothing to publish). */
  folded?: boolean;
  /** The jobs are existing rows made runnable again (a signal, a resume) rather than new ones. */
  released?: boolean;
  /**
   * Whether any of the jobs carries a concurrency key. Absent: not known (announced rows), which wakes
   * claimers to look at keyed rows as well.
   */
  keyed?: boolean;
}

/**
 * What a client asks of its node: type defaults for enqueue, and what to do before and after jobs are
 * written (fold a wakeup into the insert, wake the local poller, publish a hint).
 */
export interface ClientHooks {
  /** The defaults of a registered job type (queue, priority, attempts...), or undefined when not registered here. */
  typeDefaults(type: string): TypeDefaults | undefined;
  /**
   * Before an insert: the notify to send from the insert statement itself (see
   * `Coordinator.foldNotify`), or undefined to publish after it, if at all.
   */
  foldWakeup(jobs: readonly NewJob[], transactional: boolean): FoldedNotify | undefined;
  /** After an insert: wakes this node's poller and publishes a hint, as `how` allows. */
  afterEnqueue(
    jobs: readonly EnqueuedJob[],
    inTransaction: Queryable | undefined,
    how?: AfterEnqueue,
  ): Promise<void>;
  /** After a cancel: a running job is stopped where it runs (here, or on another node through a hint). */
  afterCancel(result: CancelResult): void;
  /**
   * Existing jobs went back to PENDING (a signal, a resume, a timed-out wait): a claimer that only looks
   * past its floors (claim cursors) must look at everything once.
   */
  afterRelease(): void;
  /** The node's event stream, for the events of composition (signals, pauses, flows). */
  readonly events: PawlEventEmitter;
}

/**
 * For pawl only: what a node passes to the client it extends: the configuration it already resolved (so client
 * and node read one resolution) and its hooks.
 */
export interface ClientNode {
  config: ResolvedConfig;
  hooks: ClientHooks;
}

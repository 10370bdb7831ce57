/**
 * The coordinator SPI: how a node tells the others "new work is ready" and hears the same from them.
 * Correctness never depends on it; the store decides who runs what. A coordinator only cuts latency,
 * and every implementation must degrade to "no wakeups" rather than fail the node.
 */

/** A wakeup hint: what kind of work appeared, and which node saw it first. */
export interface WakeupHint {
  /** The numeric priority of the work that caused the hint (the highest in a coalesced window). */
  priority: number;
  /** The node id of the publisher; a node ignores hints whose source is itself. */
  source: string;
  /** A job type or queue name the work belongs to, when all of it shares one. */
  target?: string;
  /**
   * What the hint is about: new work (the default), a request to cancel a running job, or (`finished`) a
   * completion notice: jobs ended, so `pawl.waitFor` callers re-read them (never trusting the hint itself).
   */
  kind?: "work" | "cancel" | "finished";
  /** For `kind: "cancel"`: the id of the job whose cancellation was requested. */
  jobId?: string;
  /**
   * For `kind: "finished"`: the ids of jobs that reached a final status (at most
   * `MAX_FINISHED_IDS`); absent means "some jobs ended, re-read every one you wait for".
   */
  jobIds?: string[];
  /**
   * For work: the work is existing jobs made runnable again under their old ids (a signal, a resume), not
   * new rows. A node whose claim cursors only look above their floors looks at everything once (a full
   * pass), instead of finding them at its next full pass (up to a minute on an idle node).
   */
  released?: boolean;
  /**
   * For work: none of it carries a concurrency key. A node whose last look found no keyed row live then
   * claims without the keyed statement, so the job starts one round trip sooner. Absent means "may carry
   * keys" (the node looks at keyed rows too): what older publishers, SQL enqueues and merged hints that
   * disagree send, and always safe.
   */
  unkeyed?: boolean;
}

/** Counters and state every coordinator exposes, read by metrics and the inspector. */
export interface CoordinatorStatus {
  /** The transport name: none, in-memory, postgres, amqp or hazelcast. */
  transport: string;
  /** Whether the transport is connected now. */
  connected: boolean;
  /** Hints handed to the transport. */
  published: number;
  /** Hints received from other nodes and delivered to listeners. */
  received: number;
  /** Hints dropped: this node's own, or merged by coalescing. */
  suppressed: number;
  /** Messages on the channel that were not valid hints. */
  malformed: number;
  /** Successful reconnections after an outage. */
  reconnects: number;
  /**
   * Hints dropped without being sent: published while disconnected, under transport backpressure, or too
   * large to encode. Optional so coordinators written before it was added still satisfy the interface.
   */
  dropped?: number;
}

/** A parameterised SQL statement, shaped like node-postgres' `QueryConfig`. */
export interface TransactionalNotify {
  /** The SQL text, with `$1`-style placeholders. */
  text: string;
  /** The values bound to the placeholders. */
  values: unknown[];
}

/** A notification for PostgreSQL's `pg_notify(channel, payload)`, for a store to send from its own statement. */
export interface FoldedNotify {
  /** The LISTEN/NOTIFY channel. */
  channel: string;
  /** The encoded hint. */
  payload: string;
}

/** Lifecycle events a coordinator reports to its owner. */
export interface CoordinatorEvents {
  /** Connected (first time or after an outage): the node should poll once to catch up on lost hints. */
  connected: () => void;
  /** Lost the connection; the node falls back to polling. Reported once per outage. */
  disconnected: (error: unknown) => void;
  /** A message that was not a valid hint was ignored. */
  malformed: (raw: unknown) => void;
}

/**
 * A wakeup transport.
 *
 * @example
 * ```ts
 * const off = coordinator.onWakeup((hint) => poller.wake(hint));
 * await coordinator.start();
 * coordinator.notifyNewWork({ priority: 30, source: nodeId });
 * ```
 */
export interface Coordinator {
  /** Connects. Resolves once connected, or once the first attempt failed and reconnection runs in the background: it never rejects for an unreachable server. */
  start(): Promise<void>;
  /** Publishes a hint. Never throws and never blocks: hints are coalesced and dropped while disconnected. */
  notifyNewWork(hint: WakeupHint): void;
  /** Subscribes to hints from other nodes; returns the unsubscribe function. */
  onWakeup(listener: (hint: WakeupHint) => void): () => void;
  /** Subscribes to lifecycle events; returns the unsubscribe function. */
  on<E extends keyof CoordinatorEvents>(event: E, listener: CoordinatorEvents[E]): () => void;
  /** Counters and connection state. */
  status(): CoordinatorStatus;
  /** Disconnects and releases everything; idempotent. */
  close(): Promise<void>;
  /**
   * Optional transactional publish, for transports whose channel lives in the job database (only
   * postgres). Returns a statement the store runs inside the enqueuing transaction instead of calling
   * {@link Coordinator.notifyNewWork} after it: the hint is delivered at COMMIT, and a rolled-back enqueue
   * wakes nobody. The statement bypasses coalescing; the store should call it once per transaction.
   *
   * @example
   * ```ts
   * const stmt = coordinator.inTransaction?.({ priority: 50, source: nodeId });
   * if (stmt) await tx.query(stmt.text, stmt.values);
   * ```
   */
  inTransaction?(hint: WakeupHint): TransactionalNotify;
  /**
   * Optional, for transports whose channel lives in the job database (only postgres): instead of being
   * published after the insert, `hint` is handed to the store, which calls pg_notify from the insert
   * statement itself. It is delivered when the insert commits, a round trip sooner than a separate publish,
   * and a rolled-back or conflicting insert (no row inserted) wakes nobody.
   *
   * Outside a transaction (`transactional: false`) the hint is coalesced first, exactly like
   * {@link Coordinator.notifyNewWork}: the result is undefined when it was merged into a hint the
   * coordinator publishes itself at the end of its window. Inside one it bypasses coalescing, like
   * {@link Coordinator.inTransaction}.
   *
   * @example
   * ```ts
   * const notify = coordinator.foldNotify?.({ priority: 30, source: nodeId }, false);
   * // INSERT ... ; SELECT pg_notify(notify.channel, notify.payload) in the same statement
   * ```
   */
  foldNotify?(hint: WakeupHint, transactional: boolean): FoldedNotify | undefined;
}

/**
 * inline(): each job runs as it is enqueued, in the caller's flow, with the handler registered on the
 * same Pawl. The job is really inserted, then claimed by id under a node id of its own and run by
 * {@link runAttempt}, so its row ends exactly as a node would leave it (SUCCEEDED, PENDING for a retry or a
 * snooze, DEAD), and the instance's events fire.
 *
 * Transactional enqueues. PostgreSQL has no commit hook a client can subscribe to, so a job enqueued with
 * `options.client` is inserted in that transaction and remembered with the transaction's id
 * (`txid_current()`). It runs at the next {@link InlineMode.flush}: an explicit `flush()`, the next
 * enqueue made outside a transaction, or `restore()` (the end of the block). A flush asks the server
 * (`txid_status()`): a committed transaction's jobs run then, which is exactly "after commit"; a rolled-back
 * transaction's jobs never existed and never run (nor do those of a rolled-back savepoint: their row is
 * not there); jobs of a transaction still open wait for a later flush.
 *
 * Concurrency keys. A job's `concurrencyKey` and `concurrencyLimit` are validated and stored by the real
 * enqueue. Running, inline keeps the keyed claim's rule: a job starts only while fewer than its limit of
 * its key's jobs run. Inline claims one job at a time, and the claim by id refuses a job whose key is full
 * (counting every node's leases and this mode's). Inline runs jobs one after another, except where the
 * caller overlaps them: a handler that enqueues a job of its own key, or enqueues made in parallel. A job
 * refused for its limit stays PENDING (its enqueue returns it so) and is held: it is tried again after
 * each attempt this mode finishes and at every flush, so it runs once a job of its key has ended. A job
 * still held at `restore()` stays PENDING, for a node or {@link drain}.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { EnqueueOptions } from "../input/enqueue-input.js";
import { PawlError } from "../core/errors.js";
import type { EnqueueItem } from "../input/task-map.js";
import type { Pawl } from "../api/pawl.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { ClaimedJob } from "../store/claim/claim-jobs.js";
import { asQueryable, type SqlClient } from "../db/sql.js";
import { patchEnqueue, registeredTypes } from "./internals.js";
import type { PawlTasks } from "../input/task-map.js";
import { runAttempt, type AttemptResult, type TypedAttemptResult } from "./run-attempt.js";

/** Options of {@link inline}. */
export interface InlineOptions {
  /**
   * An enqueue of a type with no handler on this Pawl: `throw` (default) refuses it with a PawlError
   * `INVALID_STATE` before anything is written; `skip` inserts it and leaves it PENDING, as a node
   * without that handler would.
   */
  unregistered?: "throw" | "skip";
  /** How deep jobs may enqueue jobs that run inline (a job that enqueues itself would never end). Default 20. */
  maxDepth?: number;
}

/** What {@link inline} returns (its attempts typed by the task map of the Pawl it runs). */
export interface InlineMode<Tasks = PawlTasks> {
  /** Every attempt run so far, in order. */
  readonly results: readonly TypedAttemptResult<Tasks>[];
  /**
   * Runs the jobs of transactions that have committed since they enqueued, and the jobs held because their
   * concurrency key was at its limit whose key now has room; returns their attempts.
   */
  flush(): Promise<TypedAttemptResult<Tasks>[]>;
  /** Flushes, then puts the instance's own enqueue methods back. Idempotent. */
  restore(): Promise<void>;
}

interface Waiting {
  xid: string;
  jobs: { id: string; type: string }[];
}

const depth = new AsyncLocalStorage<number>();

/**
 * Runs every job enqueued on `pawl` at once, with its registered handler.
 *
 * The enqueue returns the job as it is after its attempt (`status`, `result`, `errors`), still with
 * `inserted`. A job due later (`delayMs`, `runAt`) runs at once too; a unique enqueue that returns a live
 * job runs nothing; a job enqueued with `client` runs after that transaction commits (see the file header:
 * at the next flush). The handler gets a real JobContext (attempt 1 for a new job, the deadline of its
 * timeout, `JobContext.current()`), and its outcome is recorded by the runtime's own rules: a failure is
 * retried or sent DEAD exactly as on a node, and a Snooze leaves the job PENDING. The retried job is not
 * run again: call {@link drain} with `now` to run it. Circuit breakers, resource permits and rate limits are not
 * consulted. Concurrency limits are: a job whose key is full is returned PENDING and runs once a job of its
 * key ends (see the file header).
 *
 * @example
 * ```ts
 * import { inline } from "pawl/testing";
 *
 * const mode = inline(pawl);
 * const job = await pawl.enqueue("invoice.render", { id: 7 });
 * expect(job.status).toBe("SUCCEEDED");
 * expect(mode.results[0]?.result).toEqual({ pages: 2 });
 * await mode.restore();
 * ```
 */
export function inline<Tasks extends object>(pawl: Pawl<Tasks>, options?: InlineOptions): InlineMode<Tasks>;
/**
 * Runs `block` with jobs run inline, then flushes and restores (also when `block` throws).
 *
 * @example
 * ```ts
 * await inline(pawl, async () => {
 *   await db.transaction(async (client) => {
 *     await createOrder(client, order);
 *     await pawl.enqueue("order.confirm", { id: order.id }, { client }); // runs after COMMIT
 *   });
 * });
 * ```
 */
export function inline<T, Tasks extends object = PawlTasks>(
  pawl: Pawl<Tasks>,
  block: (mode: InlineMode<Tasks>) => T | Promise<T>,
  options?: InlineOptions,
): Promise<T>;
export function inline<T, Tasks extends object>(
  pawl: Pawl<Tasks>,
  blockOrOptions?: ((mode: InlineMode<Tasks>) => T | Promise<T>) | InlineOptions,
  maybeOptions?: InlineOptions,
): InlineMode<Tasks> | Promise<T> {
  const block = typeof blockOrOptions === "function" ? blockOrOptions : undefined;
  const opts = (typeof blockOrOptions === "function" ? maybeOptions : blockOrOptions) ?? {};
  const unregistered = opts.unregistered ?? "throw";
  const maxDepth = opts.maxDepth ?? 20;
  const nodeId = `pawl-testing-inline-${randomBytes(4).toString("hex")}`;
  const results: AttemptResult[] = [];
  let waiting: Waiting[] = [];
  /** Jobs refused because their key was at its limit; tried again after each attempt and at each flush. */
  let held: { id: string; type: string }[] = [];
  /** The tail of this mode's claims: one at a time, so two of its own claims never both see a free slot. */
  let claiming: Promise<unknown> = Promise.resolve();

  const check = (types: readonly string[]) => {
    if (unregistered === "throw") {
      const known = registeredTypes(pawl);
      // Non-string types are left to enqueue's own validation, which names the bad item.
      const missing = types.find((t) => typeof t === "string" && !known.has(t));
      if (missing !== undefined) {
        throw new PawlError(
          "INVALID_STATE",
          `inline: no handler is registered for ${JSON.stringify(missing)} on this pawl`,
        );
      }
    }
    const level = depth.getStore() ?? 0;
    if (level >= maxDepth) {
      throw new PawlError(
        "INVALID_STATE",
        `inline: jobs enqueued jobs ${level} levels deep (maxDepth ${maxDepth})`,
      );
    }
  };

  const claimOne = (id: string): Promise<ClaimedJob | null> => {
    const claim = claiming.then(() => pawl.store.claimById(id, nodeId));
    claiming = claim.catch(() => undefined);
    return claim;
  };

  /**
   * Claims and runs each job by id (a type without a handler stays PENDING, untouched). A job refused while
   * still PENDING and unleased was refused for its key's limit: it is held, and tried again once an
   * attempt of this mode ends (which may have freed its key's slot).
   */
  const runIds = async (jobs: readonly { id: string; type: string }[]): Promise<AttemptResult[]> => {
    const ran: AttemptResult[] = [];
    for (const job of jobs) {
      const type = registeredTypes(pawl).get(job.type);
      if (!type) continue;
      const claimed = await claimOne(job.id);
      if (!claimed) {
        // Rolled back, canceled or taken by a node (then it is not PENDING), or its key is full.
        if ((await pawl.store.get(job.id))?.status === "PENDING") held.push(job);
        continue;
      }
      const result = await depth.run((depth.getStore() ?? 0) + 1, () =>
        runAttempt(pawl, claimed, type, nodeId),
      );
      results.push(result);
      ran.push(result);
      ran.push(...(await runHeld()));
    }
    return ran;
  };

  /** Tries the held jobs again; those still refused are held again. */
  const runHeld = async (): Promise<AttemptResult[]> => {
    if (held.length === 0) return [];
    const retry = held;
    held = [];
    return runIds(retry);
  };

  /** Runs each fresh job; returns each job as read afterwards (as given when nothing ran). */
  const runJobs = async <J extends EnqueuedJob>(jobs: readonly J[]): Promise<J[]> => {
    const out: J[] = [];
    for (const job of jobs) {
      if (!job.inserted || job.status !== "PENDING") {
        out.push(job);
        continue;
      }
      if ((await runIds([job])).length === 0) {
        out.push(job);
        continue;
      }
      const after = await pawl.store.get(job.id);
      out.push(after ? ({ ...after, inserted: job.inserted } as J) : job);
    }
    return out;
  };

  const remember = async (client: SqlClient, jobs: readonly EnqueuedJob[]) => {
    const fresh = jobs
      .filter((j) => j.inserted && j.status === "PENDING")
      .map(({ id, type }) => ({ id, type }));
    if (fresh.length === 0) return;
    const xid = await pawl.store.withClient(asQueryable(client)).transactionId();
    if (xid !== null) waiting.push({ xid, jobs: fresh });
  };

  const flush = async (): Promise<AttemptResult[]> => {
    const entries = waiting;
    waiting = [];
    const ran: AttemptResult[] = [];
    const open: Waiting[] = [];
    for (const entry of entries) {
      const status = await pawl.store.transactionStatus(entry.xid);
      if (status === "in progress") open.push(entry);
      else if (status !== "aborted") ran.push(...(await runIds(entry.jobs)));
    }
    waiting = [...open, ...waiting];
    ran.push(...(await runHeld()));
    return ran;
  };

  const unpatch = patchEnqueue(pawl, "inline", (original) => ({
    enqueue: async <P = unknown, K extends string = string>(
      type: K,
      payload?: P,
      options?: EnqueueOptions,
    ) => {
      check([type]);
      if (options?.client !== undefined) {
        const job = await original.enqueue<P, K>(type, payload, options);
        await remember(options.client, [job]);
        return job;
      }
      await flush();
      const [job] = await runJobs([await original.enqueue<P, K>(type, payload, options)]);
      return job as EnqueuedJob<P, K>;
    },
    enqueueMany: async (items: readonly EnqueueItem[], options: { client?: SqlClient } = {}) => {
      if (Array.isArray(items)) check(items.map((i) => (i as { type?: unknown } | null)?.type as string));
      if (options.client !== undefined) {
        const jobs = await original.enqueueMany(items, options);
        await remember(options.client, jobs);
        return jobs;
      }
      await flush();
      return runJobs(await original.enqueueMany(items, options));
    },
  }));

  let restoring: Promise<void> | null = null;
  // The attempts are the runtime's, untyped; the task map only says what their results are.
  const mode = {
    results,
    flush,
    restore() {
      restoring ??= (async () => {
        try {
          await flush();
        } finally {
          unpatch();
        }
      })();
      return restoring;
    },
  } as unknown as InlineMode<Tasks>;
  if (!block) return mode;
  return (async () => {
    try {
      return await block(mode);
    } finally {
      await mode.restore();
    }
  })();
}

/**
 * What a durable handler's context needs from the store and the client: the durable statements on the
 * pool, the spawn (a child enqueued in the transaction that records it, so a re-run never enqueues a
 * second one) and the park of an attempt on a durable wait (the write, then the re-check). Built once per
 * pawl instance from its {@link CompositionDeps}; a node hands it to every attempt's context.
 */
import type { PawlEventEmitter } from "../../core/events.js";
import { buildNewJob, type EnqueueOptions } from "../../input/enqueue-input.js";
import { defaultMaxStepResultBytes } from "../../logic/durable-replay.js";
import type { DurablePark, DurableStore } from "../../store/durable/durable-store.js";
import type { EnqueuedJob } from "../../store/jobs/enqueue-jobs.js";
import { announce, type CompositionDeps } from "../deps.js";
import { DurableStepError } from "./durable-errors.js";

/** Options of `ctx.spawn()`: those of `enqueue`, without `uniqueKey` and `client`. */
export type SpawnOptions = Omit<EnqueueOptions, "uniqueKey" | "client">;

/** The store and client access of durable handlers. */
export interface DurableServices {
  /** The durable statements, on the pool. */
  readonly store: DurableStore;
  /** Where the durable events go (`durable:step`): the instance's event stream. */
  readonly events: PawlEventEmitter | undefined;
  /** The size limit of one step's recorded result (bytes of JSON). */
  readonly maxStepResultBytes: number;
  /**
   * pawl/testing's clock ahead of the database's (drain's `now`): durable decisions take the later of the
   * two, and waits begun then end that long after it. Absent on a node.
   */
  readonly testNow?: Date;
  /**
   * Enqueues the child of step `name` of `parentId` once: returns its id, the recorded one when the spawn
   * is recorded already (a re-run, or another run of the same attempt).
   *
   * @throws ValidationError for a bad type, payload or option (nothing is written).
   */
  spawn(
    parentId: string,
    name: string,
    attempt: number,
    type: string,
    payload: unknown,
    options: SpawnOptions | undefined,
  ): Promise<string>;
  /**
   * Parks a RUNNING attempt of `nodeId` on a durable wait, then wakes it at once if its wait is already
   * over. Resolves false when the node no longer held the job (nothing written).
   */
  park(nodeId: string, park: DurablePark, job: ParkedWork): Promise<boolean>;
  /**
   * After a park that failed, or whose outcome is unknown (a lost reply): runs its re-check again, in the
   * background with backoff, until one answers. Only the re-check wakes a job whose wait ended while it
   * was parking (its last child ended, its signal came), and a wait without a deadline has no sweep to
   * fall back on. Harmless when the park never committed: the re-check only touches a parked row.
   */
  recheckLater(id: string, job: ParkedWork): void;
}

/** Tries of {@link DurableServices.recheckLater}: 1, 2, 4 ... 30 s apart, about 10 minutes in all. */
const recheckTries = 24;

/** What waking a parked job announces (its type, queue and priority). */
export interface ParkedWork {
  type: string;
  queue: string;
  priority: number;
}

/** Builds the {@link DurableServices} of a pawl instance. */
export function durableServices(
  deps: CompositionDeps,
  maxStepResultBytes = defaultMaxStepResultBytes,
  testNow?: Date,
): DurableServices {
  const store = deps.store.durable;
  return {
    store,
    events: deps.events,
    maxStepResultBytes,
    ...(testNow ? { testNow } : {}),
    async spawn(parentId, name, attempt, type, payload, options) {
      const o = (options ?? {}) as Record<string, unknown>;
      for (const key of ["uniqueKey", "client"]) {
        if (o[key] !== undefined) {
          throw new DurableStepError(
            "INVALID_STEP",
            name,
            `ctx.spawn(${JSON.stringify(name)}) takes no ${key}: the step's name makes the spawn happen once`,
          );
        }
      }
      const job = buildNewJob(
        type,
        payload,
        options,
        deps.hooks?.typeDefaults(type),
        deps.config.maxPayloadBytes,
      );
      const spawned = await deps.store.transaction(async (tx): Promise<EnqueuedJob | null> => {
        if (!(await tx.durable.claimSpawn(parentId, name, attempt))) return null;
        const [row] = await tx.enqueue([job]);
        await tx.durable.recordSpawn(parentId, name, row!.id);
        return row!;
      });
      if (spawned) {
        await deps.hooks?.afterEnqueue([spawned], undefined, { keyed: job.concurrencyKey != null });
        return spawned.id;
      }
      const recorded = await store.readStep(parentId, name);
      const id = recorded?.children?.[0];
      if (recorded?.kind !== "spawn" || id === undefined) {
        throw new DurableStepError(
          "STEP_KIND_MISMATCH",
          name,
          `step ${JSON.stringify(name)} is recorded as a ${recorded?.kind ?? "missing"} step, not a spawn`,
        );
      }
      return id;
    },
    async park(nodeId, park, job) {
      if (!(await store.park(nodeId, park))) return false;
      await recheck(park.id, job);
      return true;
    },
    recheckLater(id, job) {
      const attempt = (n: number): void => {
        const timer = setTimeout(
          () => {
            recheck(id, job).catch(() => {
              if (n + 1 < recheckTries) attempt(n + 1);
            });
          },
          Math.min(1000 * 2 ** n, 30_000),
        );
        timer.unref();
      };
      attempt(0);
    },
  };

  // What it waits for came while it parked: it is PENDING again, so the nodes are told as a signal would.
  async function recheck(id: string, job: ParkedWork): Promise<void> {
    if (await store.recheck(id)) {
      await announce(deps, [{ id, ...job, scheduledTime: new Date() }], undefined, true);
    }
  }
}

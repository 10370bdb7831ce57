/**
 * The durable machines part of the inspector's JSON (`GET /debug/actors`): a durable machine
 * (`registerMachine`) is not an actor of any node while it is parked, and runs on whichever node claims it
 * next, so one node's actor tree cannot show it. This reads the machines that have not ended from the
 * store instead, bounded, and splits them into live (a node runs one now) and parked (it waits for an
 * event or a timer, in PostgreSQL only).
 */
import { machineActorId } from "../src/node/machines/machine-inspection.js";
import type { MachineListOptions, MachineSummary } from "../src/store/operator/machine-list-sql.js";

/** One durable machine in {@link MachinesView}. */
export interface MachineActorView {
  /** The actor's id in the views: `machine-<job id>`. */
  id: string;
  jobId: string;
  type: string;
  version: string | null;
  /** The persisted state value (null before its first run). */
  value: unknown;
  /** RUNNING (live), WAITING (parked), PENDING (due to run). */
  jobStatus: string;
  /** The node running it, while it runs. */
  node: string | null;
  /** Its earliest pending `after` timer (ISO 8601), or null. */
  nextTimerAt: string | null;
  /** Events sent to it so far. */
  events: number;
  /** When its row last changed (ISO 8601). */
  updatedAt: string;
}

/** The durable machines that have not ended, in {@link ActorsView}. */
export interface MachinesView {
  /** Running on a node now. */
  live: MachineActorView[];
  /** Waiting for an event or a timer, held only in PostgreSQL (or due to run, PENDING). */
  parked: MachineActorView[];
  /** The most machines read (the newest by job id). */
  limit: number;
  /** Whether more machines than `limit` have not ended. */
  more: boolean;
}

/** Where the inspector reads durable machines: a {@link Pawl}'s store satisfies it. */
export interface MachineSource {
  readonly store?: {
    readonly operator: { machines(limit: number, options?: MachineListOptions): Promise<MachineSummary[]> };
  };
}

/** Reads the machines view, or null when the source has no store. */
export async function machinesView(source: MachineSource, limit: number): Promise<MachinesView | null> {
  if (!source.store) return null;
  const rows = await source.store.operator.machines(limit + 1);
  const shown = rows.slice(0, limit).map((m): MachineActorView => ({
    id: machineActorId(m.jobId),
    jobId: m.jobId,
    type: m.type,
    version: m.version,
    value: m.value,
    jobStatus: m.jobStatus,
    node: m.pickedBy,
    nextTimerAt: m.nextTimerAt?.toISOString() ?? null,
    events: m.lastSeq,
    updatedAt: m.updatedAt.toISOString(),
  }));
  return {
    live: shown.filter((m) => m.jobStatus === "RUNNING"),
    parked: shown.filter((m) => m.jobStatus !== "RUNNING"),
    limit,
    more: rows.length > limit,
  };
}

/**
 * The newest `limit` parked machines (WAITING or PENDING: no node runs them), by job id, each with its
 * persisted context, raw: the caller sanitizes it. None without a store or with `limit` 0.
 */
export async function parkedMachines(source: MachineSource, limit: number): Promise<MachineSummary[]> {
  if (!source.store || limit <= 0) return [];
  return source.store.operator.machines(limit, { context: true, parkedOnly: true });
}

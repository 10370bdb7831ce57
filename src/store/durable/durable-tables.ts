/**
 * The qualified names of the durable handlers' and machines' tables (migrations 0018, 0020), derived from a schema's
 * {@link Tables} so the shared table list stays as it was.
 */
import type { Tables } from "../../db/sql.js";

/** A schema's durable tables. */
export interface DurableTables {
  /** One row per recorded step of a job (scheduler_job_step). */
  steps: string;
  /** Named signals, kept until a wait consumes them (scheduler_job_signal). */
  signals: string;
  /** One row per durable machine job (scheduler_machine, migration 0020). */
  machines: string;
  /** A machine's event inbox and history (scheduler_machine_event, migration 0020). */
  machineEvents: string;
  /** `pawl_durable_wake(job)`: makes a durably parked job runnable. */
  wake: string;
}

const cache = new WeakMap<Tables, DurableTables>();

/** The durable tables of `t`'s schema (built once per {@link Tables}). */
export function durableTables(t: Tables): DurableTables {
  let d = cache.get(t);
  if (!d) {
    d = {
      steps: `${t.s}.scheduler_job_step`,
      signals: `${t.s}.scheduler_job_signal`,
      machines: `${t.s}.scheduler_machine`,
      machineEvents: `${t.s}.scheduler_machine_event`,
      wake: `${t.s}.pawl_durable_wake`,
    };
    cache.set(t, d);
  }
  return d;
}

-- previous release: compatible (adds one table a 0.2.0 node never names)
--
-- pawl 0021: the job types registered as durable machines (docs/durable-machines.md), so a send from any
-- process, a plain client's included, can tell a machine's job from a job that is no machine: a send to
-- the latter would be stored and never consumed, so it is refused (NotAMachineError).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- A node that registers machines records their types when it starts. A row is never deleted: a type that
-- was a machine on some node may still have parked machine jobs, whatever a newer deploy registers.
CREATE TABLE {{schema}}.scheduler_machine_type (
  type           text PRIMARY KEY,
  registered_at  timestamptz NOT NULL DEFAULT now()
);

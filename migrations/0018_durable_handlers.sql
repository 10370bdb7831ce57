-- previous release: compatible (adds two tables, one nullable column a 0.2.0 node never names, and a trigger on its deletes; a 0.2.0 node's sweep and unnamed signal may wake a durable job early, which re-parks on resume)
--
-- pawl 0018: durable handlers (issue 41, docs/durable.md): ctx.step, ctx.sleep, named ctx.waitForSignal,
-- ctx.spawn and ctx.waitFor.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- A durable handler re-runs from the top after every interruption; what it did is recorded here, one row
-- per named step, so a later run returns the recorded answer instead of doing it again. A durable wait
-- (sleep, named signal, children) parks the job the way ctx.waitForSignal() always has (migration 0004):
-- WAITING, signal_state 'waiting', the attempt given back, with `signal_deadline` the time the wait ends
-- on its own (a sleep's due time, a wait's timeout). The existing signal sweep wakes it then, on any
-- node, a 0.2.0 node included. What the job waits for is the step row whose status is 'waiting'. Every
-- wait re-checks its condition when the job resumes, so a wakeup that comes early (a 0.2.0 node's unnamed
-- signal) only parks the job again.

-- Parked jobs live in the live table, and autovacuum's default trigger (50 dead rows plus 20% of the
-- table) grows with it: beside 100,000 sleeping rows the claim index would carry 20,000 dead entries of
-- finished jobs before a vacuum, and every claim would step over them (measured: claim buffers 634 -> 740
-- over three drains). 2% keeps the dead entries a claim walks as few as with no job parked, and changes
-- nothing for a table of a few thousand rows (the 50-row threshold dominates). A reloption: no rewrite,
-- and its lock (SHARE UPDATE EXCLUSIVE) does not block claims or writes.
ALTER TABLE {{schema}}.scheduler_job_queue SET (autovacuum_vacuum_scale_factor = 0.02);

-- One row per step of a job, keyed by the step's name (names are unique within a run: the contract a
-- handler keeps across deploys). No foreign key: a job's row moves between the live and finished tables
-- and is pruned by partition; the pruner's pass deletes the steps of jobs that no longer exist
-- (src/store/durable/step-prune-sql.ts).
CREATE TABLE {{schema}}.scheduler_job_step (
  job_id       bigint NOT NULL,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- step: ctx.step; sleep: ctx.sleep; signal: a named ctx.waitForSignal; spawn: ctx.spawn (the child id in
  -- `children`); wait: ctx.waitFor (the awaited ids in `children`).
  kind         text NOT NULL CHECK (kind IN ('step', 'sleep', 'signal', 'spawn', 'wait')),
  -- waiting: a wait the job is parked on (or about to be); succeeded: recorded, returned on every later
  -- run; failed: the last run of a step threw (it runs again on the next attempt).
  status       text NOT NULL CHECK (status IN ('waiting', 'succeeded', 'failed')),
  -- The attempt that wrote the row last.
  attempt      integer NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  -- When a waiting sleep is due, or a wait times out (NULL: no timeout).
  wake_at      timestamptz,
  children     bigint[],
  result       jsonb,
  error        jsonb,
  PRIMARY KEY (job_id, name)
);

-- Named signals, kept whether or not the job waits yet (pawl.signal(id, payload, { name })). A wait takes
-- the oldest unconsumed one of its name, and marks it consumed in the statement that records the wait's
-- step, so it is consumed exactly once.
CREATE TABLE {{schema}}.scheduler_job_signal (
  id           bigserial PRIMARY KEY,
  job_id       bigint NOT NULL,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  payload      jsonb,
  sent_at      timestamptz NOT NULL DEFAULT now(),
  consumed_at  timestamptz
);

-- A wait's lookup (the oldest unconsumed signal of (job, name)), and the pruner's pass by job. Not partial:
-- the pass deletes consumed signals too, and a job's consumed signals are few.
CREATE INDEX scheduler_job_signal_job_idx
  ON {{schema}}.scheduler_job_signal (job_id, name, id);

-- The job that spawned this one (ctx.spawn). NULL on every other job; nullable with no default, so adding
-- it rewrites nothing, and a 0.2.0 node, whose statements name their columns, never sees it.
ALTER TABLE {{schema}}.scheduler_job_queue ADD COLUMN parent_job_id bigint;
ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN parent_job_id bigint;

-- Makes a durably parked job runnable: PENDING (PAUSED when a pause holds it), due no earlier than now,
-- as a signal does. When a live job took its unique key meanwhile, it is left parked with its deadline
-- set to now, and the signal sweep applies the unique-key rule (CANCELED) as for any parked job.
CREATE FUNCTION {{schema}}.pawl_durable_wake(job bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  k text;
BEGIN
  SELECT unique_key INTO k FROM {{schema}}.scheduler_job_queue
  WHERE id = job AND status = 'WAITING' AND signal_state = 'waiting';
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF k IS NOT NULL AND EXISTS (
    SELECT 1 FROM {{schema}}.scheduler_job_queue o
    WHERE o.unique_key = k AND o.status IN ('PENDING', 'RUNNING') AND o.id <> job
  ) THEN
    UPDATE {{schema}}.scheduler_job_queue SET signal_deadline = now(), updated_at = now() WHERE id = job;
    RETURN;
  END IF;
  UPDATE {{schema}}.scheduler_job_queue j
  SET status = CASE WHEN {{schema}}.pawl_pause_rule(j.queue, j.type) IS NULL THEN 'PENDING' ELSE 'PAUSED' END,
      paused_by = {{schema}}.pawl_pause_rule(j.queue, j.type),
      signal_state = 'delivered', signal_payload = NULL, signal_deadline = NULL, signaled_at = now(),
      scheduled_time = greatest(j.scheduled_time, now()), updated_at = now()
  WHERE j.id = job;
END
$$;

-- A child left the live table (it ended: SUCCEEDED, DEAD or CANCELED, moved in the statement that ended
-- it, on whichever node, of whichever release): if its parent is parked in ctx.waitFor and none of the
-- children it awaits is live any more, the parent becomes runnable. The parent's row lock orders this
-- against the parent's park (which locks the row, then checks its children) and against the other
-- children's endings (each checks after taking the lock, with a fresh snapshot, so the last one to commit
-- sees every other child gone): exactly one of them, or the park itself, wakes the parent.
CREATE FUNCTION {{schema}}.pawl_durable_child_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  parent {{schema}}.scheduler_job_queue%ROWTYPE;
  awaited bigint[];
BEGIN
  SELECT * INTO parent FROM {{schema}}.scheduler_job_queue
  WHERE id = OLD.parent_job_id FOR NO KEY UPDATE;
  IF NOT FOUND OR parent.status <> 'WAITING' OR parent.signal_state IS DISTINCT FROM 'waiting' THEN
    RETURN NULL;
  END IF;
  SELECT s.children INTO awaited FROM {{schema}}.scheduler_job_step s
  WHERE s.job_id = parent.id AND s.kind = 'wait' AND s.status = 'waiting'
  ORDER BY s.started_at DESC LIMIT 1;
  IF awaited IS NULL OR NOT (OLD.id = ANY(awaited)) THEN
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM {{schema}}.scheduler_job_queue c WHERE c.id = ANY(awaited)) THEN
    RETURN NULL;
  END IF;
  PERFORM {{schema}}.pawl_durable_wake(parent.id);
  RETURN NULL;
END
$$;

-- Fires only for spawned children: every other job pays one WHEN evaluation per deleted row, in C.
CREATE TRIGGER pawl_durable_child_ended
  AFTER DELETE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW
  WHEN (OLD.parent_job_id IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_durable_child_ended();

-- pawl 0005: finished rows leave the live table (issue 16, docs/job-lifecycle.md#where-a-job-lives).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- A job that ends (SUCCEEDED, DEAD, CANCELED) moves to scheduler_job_finished in the statement that ends
-- it (`DELETE ... RETURNING` feeding an `INSERT`), under the same id. scheduler_job_queue keeps only live
-- rows (PENDING, RUNNING, WAITING, PAUSED), so it stays as small as the backlog, and its indexes lose the
-- entries and the partial indexes that only finished rows needed. scheduler_job_all reads both.
--
-- On a live database: the move below is one statement. It takes row locks on finished rows only (which no
-- claim, outcome or enqueue touches), so nodes keep claiming and completing while it runs; it writes each
-- moved row once more (heap and indexes of the new table, so roughly the table's finished bytes in WAL),
-- and it holds its row locks until the migration commits. The two DROP INDEX statements come last: they
-- take the live table's ACCESS EXCLUSIVE lock, so claims wait only for the end of the transaction, not
-- for the move. Upgrade every node together: a node running an older pawl would keep writing finished
-- rows into scheduler_job_queue (they still read correctly through scheduler_job_all, but are not pruned).

-- The same columns in the same order as the live table (a move inserts them by name, and `SELECT *` of
-- scheduler_job_all needs the order). A column added to scheduler_job_queue must be added here too.
CREATE TABLE {{schema}}.scheduler_job_finished
  (LIKE {{schema}}.scheduler_job_queue INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
-- Ids come with the row from the live table (one sequence, so ids are unique across both tables).
ALTER TABLE {{schema}}.scheduler_job_finished ALTER COLUMN id DROP DEFAULT;
ALTER TABLE {{schema}}.scheduler_job_finished ADD PRIMARY KEY (id);
ALTER TABLE {{schema}}.scheduler_job_finished ADD CONSTRAINT scheduler_job_finished_status_check
  CHECK (status IN ('SUCCEEDED', 'CANCELED', 'DEAD'));

-- The dead letter queue is listed newest first.
CREATE INDEX scheduler_job_finished_dead_idx
  ON {{schema}}.scheduler_job_finished (finished_at DESC, id DESC)
  WHERE status = 'DEAD';

-- Pruning finds SUCCEEDED and CANCELED rows by age.
CREATE INDEX scheduler_job_finished_pruned_idx
  ON {{schema}}.scheduler_job_finished (finished_at)
  WHERE status IN ('SUCCEEDED', 'CANCELED');

-- A flow's finished members (pawl.getFlow). Ordinary jobs have no entry.
CREATE INDEX scheduler_job_finished_flow_idx
  ON {{schema}}.scheduler_job_finished (flow_id, id)
  WHERE flow_id IS NOT NULL;

-- Existing finished rows move, before the flow triggers below exist: their flows counted them already.
WITH gone AS (
  DELETE FROM {{schema}}.scheduler_job_queue
  WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD')
  RETURNING *
)
INSERT INTO {{schema}}.scheduler_job_finished SELECT * FROM gone;

-- Every job, live or finished: what getJob, listJobs and the tools read. UNION ALL with the id predicate
-- pushed into both sides, so a read by id is two primary-key probes.
CREATE VIEW {{schema}}.scheduler_job_all AS
  SELECT * FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT * FROM {{schema}}.scheduler_job_finished;

-- The flow trigger, for members that end by moving: an insert into scheduler_job_finished is a member that
-- reached a terminal status from a live one (no OLD row), and a stop moves the canceled dependents too.
-- The tally and the settling at commit are those of migration 0004.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_flow_member_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  finals constant text[] := ARRAY['SUCCEEDED', 'DEAD', 'CANCELED'];
  old_status constant text := CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.status END;
  newly_final boolean := NEW.status = ANY(finals) AND NOT coalesce(old_status = ANY(finals), false);
  tally_key constant text := 'pawl.flow_' || TG_TABLE_SCHEMA;
  tally jsonb := coalesce(nullif(current_setting(tally_key, true), ''), '{}')::jsonb;
  fid constant text := NEW.flow_id::text;
  t jsonb := tally -> fid;
  policy text;
BEGIN
  IF t IS NULL THEN
    t := '[0, 0, 0]'::jsonb;
    INSERT INTO {{schema}}.scheduler_flow_settle (flow_id) VALUES (NEW.flow_id);
  END IF;
  t := jsonb_build_array(
    (t ->> 0)::int + (NEW.status = 'SUCCEEDED')::int - coalesce((old_status = 'SUCCEEDED')::int, 0),
    (t ->> 1)::int + (NEW.status = 'DEAD')::int - coalesce((old_status = 'DEAD')::int, 0),
    (t ->> 2)::int + (NEW.status = 'CANCELED')::int - coalesce((old_status = 'CANCELED')::int, 0));
  PERFORM set_config(tally_key, jsonb_set(tally, ARRAY[fid], t)::text, true);

  -- Dependents. Members canceled by a stop below (trigger depth 2) skip this: the closure canceled
  -- their own dependents already.
  IF newly_final AND pg_trigger_depth() = 1 AND coalesce(cardinality(NEW.flow_next), 0) > 0 THEN
    SELECT failure_policy INTO policy FROM {{schema}}.scheduler_flow WHERE id = NEW.flow_id;
    IF NEW.status = 'SUCCEEDED' OR policy = 'continue' THEN
      UPDATE {{schema}}.scheduler_job_queue d
      SET deps_pending = d.deps_pending - 1,
          flow_inputs = coalesce(d.flow_inputs, '{}'::jsonb) || jsonb_build_object(NEW.flow_step,
            CASE WHEN NEW.status = 'SUCCEEDED'
                 THEN jsonb_build_object('status', NEW.status, 'result', NEW.result)
                 ELSE jsonb_build_object('status', NEW.status) END),
          status = CASE WHEN d.deps_pending > 1 THEN d.status
                        WHEN {{schema}}.pawl_pause_rule(d.queue, d.type) IS NULL THEN 'PENDING'
                        ELSE 'PAUSED' END,
          paused_by = CASE WHEN d.deps_pending > 1 THEN d.paused_by
                           ELSE {{schema}}.pawl_pause_rule(d.queue, d.type) END,
          scheduled_time = CASE WHEN d.deps_pending > 1 THEN d.scheduled_time
                                ELSE greatest(d.scheduled_time, now()) END,
          updated_at = now()
      WHERE d.id = ANY(NEW.flow_next) AND d.status = 'WAITING';
    ELSE
      -- Stop: every member that depends on this one, directly or not, is CANCELED with the reason, and
      -- moves. Its insert fires this trigger at depth 2, which tallies it. A dependent is WAITING (one of
      -- its dependencies has not succeeded), so the closure only walks live rows.
      WITH RECURSIVE closure(id) AS (
        SELECT unnest(NEW.flow_next)
        UNION
        SELECT unnest(j.flow_next)
        FROM closure c JOIN {{schema}}.scheduler_job_queue j ON j.id = c.id
        WHERE j.flow_next IS NOT NULL
      ),
      gone AS (
        DELETE FROM {{schema}}.scheduler_job_queue d
        WHERE d.id IN (SELECT id FROM closure) AND d.status = 'WAITING'
        RETURNING d.*
      )
      INSERT INTO {{schema}}.scheduler_job_finished
        (id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts, timeout_ms,
         picked_by, picked_at, unique_key, errors, result, cancel_reason, created_at, updated_at, finished_at,
         flow_id, flow_step, deps_pending, flow_next, flow_inputs, signal_state, signal_payload,
         signal_deadline, signaled_at, paused_by)
      SELECT g.id, g.type, g.queue, g.payload, g.priority, 'CANCELED', g.scheduled_time, g.attempts,
             g.max_attempts, g.timeout_ms, g.picked_by, g.picked_at, g.unique_key, g.errors, g.result,
             format('flow %s stopped: step %s ended %s', NEW.flow_id, NEW.flow_step, NEW.status),
             g.created_at, now(), now(), g.flow_id, g.flow_step, g.deps_pending, g.flow_next,
             g.flow_inputs, g.signal_state, g.signal_payload, g.signal_deadline, g.signaled_at, g.paused_by
      FROM gone g;
    END IF;
  END IF;
  RETURN NULL;
END
$$;

-- A member ends by its insert here. A finished member whose terminal status changes (a DEAD job canceled
-- as a duplicate by dlq.retry) is tallied by the update trigger. Leaving this table (dlq.retry) is
-- counted by that statement itself (src/store/return-to-pending.ts): a DELETE trigger could not tell it
-- from pruning, which must not change a flow's counts.
CREATE TRIGGER pawl_flow_member_finished
  AFTER INSERT ON {{schema}}.scheduler_job_finished
  FOR EACH ROW
  WHEN (NEW.flow_step IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_flow_member_changed();

CREATE TRIGGER pawl_flow_member_changed
  AFTER UPDATE ON {{schema}}.scheduler_job_finished
  FOR EACH ROW
  WHEN (NEW.flow_step IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status)
  EXECUTE FUNCTION {{schema}}.pawl_flow_member_changed();

-- The live table no longer holds finished rows: the dead letter queue and pruning read the new table.
-- The RUNNING index stays: orphan recovery and the node reaper look up RUNNING rows by node every few
-- seconds, and without it they would scan the whole backlog of PENDING rows (docs/job-lifecycle.md).
DROP INDEX {{schema}}.scheduler_job_queue_dead_idx;
DROP INDEX {{schema}}.scheduler_job_queue_finished_idx;

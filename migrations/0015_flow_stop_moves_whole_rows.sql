-- previous release: compatible (replaces a trigger function's body; no table changes)
--
-- pawl 0015: a flow stop moves its canceled dependents to the finished table whole. {{schema}} is replaced
-- by the escaped schema name; the runner applies this inside one transaction.
--
-- 0005's flow trigger listed the columns of the day when it moved the dependents that a stop cancels, so
-- those rows lost every column added since: progress (0006), trace_context (0010), concurrency_key and
-- concurrency_limit (0011). The function below is 0005's with that one statement changed to move the
-- whole row (test/integration/composition/flow-concurrency-keys.test.ts, "a flow stop").
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
      -- The whole row moves, whatever columns later migrations add (both tables keep one column order,
      -- as the other moves rely on); only the status, the reason and the times change.
      INSERT INTO {{schema}}.scheduler_job_finished
      SELECT r.*
      FROM gone g, LATERAL jsonb_populate_record(NULL::{{schema}}.scheduler_job_finished,
        to_jsonb(g) || jsonb_build_object(
          'status', 'CANCELED',
          'cancel_reason', format('flow %s stopped: step %s ended %s', NEW.flow_id, NEW.flow_step, NEW.status),
          'updated_at', now(),
          'finished_at', now())) r;
    END IF;
  END IF;
  RETURN NULL;
END
$$;

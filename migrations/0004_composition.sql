-- pawl 0004: composition and flow control (docs/composition.md): chains, batches and workflows (flows),
-- signals, pause/resume of jobs, queues and job types, and the per-queue claim index.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.

-- Two new statuses. WAITING: not runnable yet (a flow step whose dependencies have not all finished, a
-- flow's completion job, or a job parked by ctx.waitForSignal()). PAUSED: runnable but held back (by
-- pawl.pauseJob, or by a paused queue or job type). Neither is ever claimed: the claim reads PENDING only.
-- The new check is a superset of the old one, so every existing row satisfies it: NOT VALID skips a scan
-- of the whole table under the migration's lock, and new rows are checked all the same.
ALTER TABLE {{schema}}.scheduler_job_queue DROP CONSTRAINT scheduler_job_queue_status_check;
ALTER TABLE {{schema}}.scheduler_job_queue ADD CONSTRAINT scheduler_job_queue_status_check
  CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'CANCELED', 'DEAD', 'WAITING', 'PAUSED')) NOT VALID;

-- Per-job composition columns. All are NULL (or 0) on ordinary jobs, and adding them rewrites nothing.
ALTER TABLE {{schema}}.scheduler_job_queue
  -- The flow (scheduler_flow.id) the job belongs to: a member step, or the flow's completion job.
  ADD COLUMN flow_id bigint,
  -- The member's name in its flow (a chain's index, a batch item's index, a workflow job's name). NULL on
  -- ordinary jobs and on a flow's completion job: the flow trigger below fires only when it is set.
  ADD COLUMN flow_step text,
  -- Dependencies not finished yet; a WAITING member becomes runnable when this reaches 0.
  ADD COLUMN deps_pending integer NOT NULL DEFAULT 0,
  -- The members that depend on this one (their ids), so finishing it touches them by primary key.
  ADD COLUMN flow_next bigint[],
  -- What the finished dependencies left for this member: {"<step>": {"status": ..., "result": ...}}.
  ADD COLUMN flow_inputs jsonb,
  -- Signals: 'waiting' (parked by ctx.waitForSignal), 'delivered' (pawl.signal woke it), 'timeout'.
  ADD COLUMN signal_state text CHECK (signal_state IN ('waiting', 'delivered', 'timeout')),
  ADD COLUMN signal_payload jsonb,
  -- When a parked job's wait times out (NULL: it waits for a signal forever).
  ADD COLUMN signal_deadline timestamptz,
  ADD COLUMN signaled_at timestamptz,
  -- Why a PAUSED job is paused: 'job' (pawl.pauseJob), or the 'queue' / 'type' pause that holds it.
  ADD COLUMN paused_by text CHECK (paused_by IN ('job', 'queue', 'type'));

-- Per-queue claims (nodes configured with `queues`) walk one queue's PENDING rows in claim order, and a
-- queue pause finds the queue's PENDING rows here. For an existing large table, create it by hand first
-- with CREATE INDEX CONCURRENTLY (same definition); IF NOT EXISTS then leaves it be.
CREATE INDEX IF NOT EXISTS scheduler_job_queue_queue_claim_idx
  ON {{schema}}.scheduler_job_queue (queue, priority DESC, scheduled_time, id)
  WHERE status = 'PENDING';

-- A flow's members (pawl.getFlow, pawl.cancelFlow). Ordinary jobs have no entry.
CREATE INDEX IF NOT EXISTS scheduler_job_queue_flow_idx
  ON {{schema}}.scheduler_job_queue (flow_id, id)
  WHERE flow_id IS NOT NULL;

-- The signal timeout sweep: parked jobs by deadline. Ordinary jobs have no entry.
CREATE INDEX IF NOT EXISTS scheduler_job_queue_signal_idx
  ON {{schema}}.scheduler_job_queue (signal_deadline)
  WHERE status = 'WAITING' AND signal_state = 'waiting';

-- Resuming a queue or a job type finds the rows its pause holds. Ordinary jobs have no entry.
CREATE INDEX IF NOT EXISTS scheduler_job_queue_paused_idx
  ON {{schema}}.scheduler_job_queue (queue, type)
  WHERE status = 'PAUSED';

-- One row per flow: its kind, failure policy and progress counters. The counters are kept by the trigger
-- below in the same transaction as each member's status change, so nothing ever counts member rows.
CREATE TABLE {{schema}}.scheduler_flow (
  id                 bigserial PRIMARY KEY,
  kind               text NOT NULL CHECK (kind IN ('chain', 'batch', 'workflow')),
  name               text CHECK (length(name) BETWEEN 1 AND 200),
  -- 'stop': a member that ends DEAD or CANCELED cancels every member that depends on it (transitively);
  -- 'continue': its dependents still run, with the failure recorded in their flow_inputs.
  failure_policy     text NOT NULL CHECK (failure_policy IN ('stop', 'continue')),
  total              integer NOT NULL CHECK (total >= 1),
  succeeded          integer NOT NULL DEFAULT 0,
  dead               integer NOT NULL DEFAULT 0,
  canceled           integer NOT NULL DEFAULT 0,
  -- The WAITING job released (with the counts in its payload) when every member is terminal.
  completion_job_id  bigint,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- Set once, by the member change that made every member terminal.
  completed_at       timestamptz
);

-- Flows still running, for pawl.listFlows({ status: "running" }) and the CLI.
CREATE INDEX scheduler_flow_running_idx ON {{schema}}.scheduler_flow (id) WHERE completed_at IS NULL;

-- Paused queues and job types, cluster-wide. While a row exists, the jobs it matches are PAUSED.
CREATE TABLE {{schema}}.scheduler_pause (
  kind       text NOT NULL CHECK (kind IN ('queue', 'type')),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  paused_at  timestamptz NOT NULL DEFAULT now(),
  -- The node or client that paused it, for people.
  paused_by  text,
  PRIMARY KEY (kind, name)
);

-- The pause that holds jobs of (queue, type): 'queue', 'type' or NULL when none does.
CREATE FUNCTION {{schema}}.pawl_pause_rule(q text, t text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT p.kind FROM {{schema}}.scheduler_pause p
  WHERE (p.kind = 'queue' AND p.name = q) OR (p.kind = 'type' AND p.name = t)
  ORDER BY p.kind LIMIT 1
$$;

-- Flow progress counters without a hot row. A batch's 100,000 members finish in a few hundred statements
-- on several nodes; updating the flow row once per member would write 100,000 versions of one row, each
-- update walking the versions before it (quadratic, and unbounded while any long transaction pins the
-- xmin horizon), with every completing statement queued on that row's lock. Instead each member's change
-- adds to a transaction-local tally (a custom setting, `pawl.flow_<schema>`, never a table row), and the
-- first change of a flow in a transaction inserts one marker here; a deferred constraint trigger on the
-- marker applies the tally to the flow row once, at commit. So the flow row changes once per transaction
-- (per outcome batch), holding its lock only while that transaction commits. Markers live and die inside
-- their transaction, so the table is UNLOGGED.
CREATE UNLOGGED TABLE {{schema}}.scheduler_flow_settle (
  id       bigserial PRIMARY KEY,
  flow_id  bigint NOT NULL
);

-- A flow member reached a terminal status (or left one, through dlq.retry): tally it for its flow, and
-- release or cancel the members that depend on it. It runs inside the statement that changed the status
-- (complete, kill, cancel, orphan recovery), so all of it commits or rolls back with that change: exactly
-- once, on whichever node wrote.
CREATE FUNCTION {{schema}}.pawl_flow_member_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  finals constant text[] := ARRAY['SUCCEEDED', 'DEAD', 'CANCELED'];
  newly_final boolean := NEW.status = ANY(finals) AND NOT (OLD.status = ANY(finals));
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
    (t ->> 0)::int + (NEW.status = 'SUCCEEDED')::int - (OLD.status = 'SUCCEEDED')::int,
    (t ->> 1)::int + (NEW.status = 'DEAD')::int - (OLD.status = 'DEAD')::int,
    (t ->> 2)::int + (NEW.status = 'CANCELED')::int - (OLD.status = 'CANCELED')::int);
  PERFORM set_config(tally_key, jsonb_set(tally, ARRAY[fid], t)::text, true);

  -- Dependents. Members canceled by a stop below (trigger depth 2) skip this: the closure canceled
  -- their own dependents already.
  IF newly_final AND pg_trigger_depth() = 1 AND coalesce(cardinality(NEW.flow_next), 0) > 0 THEN
    SELECT failure_policy INTO policy FROM {{schema}}.scheduler_flow WHERE id = NEW.flow_id;
    IF NEW.status = 'SUCCEEDED' OR policy = 'continue' THEN
      -- One dependency fewer; the last one makes the member runnable (PENDING, or PAUSED when a queue or
      -- type pause holds it), due no earlier than now, with this member's result in its flow_inputs.
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
      -- Stop: every member that depends on this one, directly or not, is CANCELED with the reason.
      WITH RECURSIVE closure(id) AS (
        SELECT unnest(NEW.flow_next)
        UNION
        SELECT unnest(j.flow_next)
        FROM closure c JOIN {{schema}}.scheduler_job_queue j ON j.id = c.id
        WHERE j.flow_next IS NOT NULL
      )
      UPDATE {{schema}}.scheduler_job_queue d
      SET status = 'CANCELED', finished_at = now(), updated_at = now(),
          cancel_reason = format('flow %s stopped: step %s ended %s', NEW.flow_id, NEW.flow_step, NEW.status)
      WHERE d.id IN (SELECT id FROM closure) AND d.status = 'WAITING';
    END IF;
  END IF;
  RETURN NULL;
END
$$;

-- At commit, once per flow and transaction: apply the transaction's tally to the flow row, and release
-- the completion job if that made every member terminal. The flow row's lock serialises concurrent
-- commits of one flow, and each sees the counters the previous one committed, so exactly one of them
-- completes it.
CREATE FUNCTION {{schema}}.pawl_flow_settle() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  tally_key constant text := 'pawl.flow_' || TG_TABLE_SCHEMA;
  tally jsonb := coalesce(nullif(current_setting(tally_key, true), ''), '{}')::jsonb;
  fid constant text := NEW.flow_id::text;
  t jsonb := tally -> fid;
  f {{schema}}.scheduler_flow%ROWTYPE;
BEGIN
  DELETE FROM {{schema}}.scheduler_flow_settle WHERE id = NEW.id;
  IF t IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM set_config(tally_key, (tally - fid)::text, true);
  UPDATE {{schema}}.scheduler_flow fl
  SET succeeded = fl.succeeded + (t ->> 0)::int,
      dead = fl.dead + (t ->> 1)::int,
      canceled = fl.canceled + (t ->> 2)::int,
      updated_at = now()
  WHERE fl.id = NEW.flow_id
  RETURNING fl.* INTO f;
  IF NOT FOUND OR f.completed_at IS NOT NULL OR f.succeeded + f.dead + f.canceled < f.total THEN
    RETURN NULL;
  END IF;
  UPDATE {{schema}}.scheduler_flow SET completed_at = now() WHERE id = f.id;
  IF f.completion_job_id IS NOT NULL THEN
    UPDATE {{schema}}.scheduler_job_queue c
    SET status = CASE WHEN {{schema}}.pawl_pause_rule(c.queue, c.type) IS NULL THEN 'PENDING' ELSE 'PAUSED' END,
        paused_by = {{schema}}.pawl_pause_rule(c.queue, c.type),
        scheduled_time = greatest(c.scheduled_time, now()),
        payload = jsonb_build_object(
          'flowId', f.id::text, 'kind', f.kind, 'name', f.name, 'total', f.total,
          'succeeded', f.succeeded, 'dead', f.dead, 'canceled', f.canceled, 'payload', c.payload),
        updated_at = now()
    WHERE c.id = f.completion_job_id AND c.status = 'WAITING';
  END IF;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER pawl_flow_settle
  AFTER INSERT ON {{schema}}.scheduler_flow_settle
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.pawl_flow_settle();

-- Fires only for flow members (flow_step set) whose status changed into or out of a terminal status, so
-- ordinary jobs pay one WHEN evaluation per updated row and never call the function.
CREATE TRIGGER pawl_flow_member_changed
  AFTER UPDATE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW
  WHEN (NEW.flow_step IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status
        AND (NEW.status IN ('SUCCEEDED', 'DEAD', 'CANCELED') OR OLD.status IN ('SUCCEEDED', 'DEAD', 'CANCELED')))
  EXECUTE FUNCTION {{schema}}.pawl_flow_member_changed();

-- Holds newly PENDING rows of paused queues and types: PENDING -> PAUSED in the statement that made them
-- PENDING (enqueue, retry, snooze, hand-back, orphan recovery, dlq.retry), so no node can ever claim one.
-- The statement triggers that call it exist only while some pause exists: pawl.pauseQueue creates them
-- and the last resume drops them (src/store/pause-sql.ts), so the write path pays nothing otherwise. They
-- read the statement's transition table `pawl_changed`, so the work is proportional to the rows it wrote.
-- Depth 1 only: its own UPDATE must not recurse, and the flow trigger applies pauses itself.
CREATE FUNCTION {{schema}}.pawl_hold_paused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() > 1 THEN
    RETURN NULL;
  END IF;
  UPDATE {{schema}}.scheduler_job_queue j
  SET status = 'PAUSED', paused_by = {{schema}}.pawl_pause_rule(j.queue, j.type), updated_at = now()
  FROM pawl_changed c
  WHERE j.id = c.id AND c.status = 'PENDING' AND j.status = 'PENDING'
    AND {{schema}}.pawl_pause_rule(c.queue, c.type) IS NOT NULL;
  RETURN NULL;
END
$$;

-- previous release: compatible (its inserts name no new column, so its finished rows land in the partition pruned row by row, as before; its reads and its pruner go through the parent)
--
-- pawl 0016: SUCCEEDED history in time partitions (issue 28, docs/job-lifecycle.md#where-a-job-lives).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- Until now every finished row was written twice (the move, then the pruner's DELETE a day later, with
-- its vacuum debt) and indexed twice (the primary key, and the finished_at index that pruning walks).
-- SUCCEEDED rows, nearly all of history, now go to partitions by finished_at that retention drops whole:
-- no DELETE, no vacuum, and no finished_at btree (a BRIN index answers the few range reads).
--
-- scheduler_job_finished becomes a parent partitioned by LIST (time_partitioned), a column only the move
-- into it sets:
--   scheduler_job_finished_rows        IN (NULL, false): the table as it was (renamed, attached, not
--                                      copied), DEAD and CANCELED rows, and SUCCEEDED rows whenever no
--                                      time partition covers the moment (before the first is made, or
--                                      from a node of the previous release, which does not set the
--                                      column). Pruned row by row, as before.
--   scheduler_job_finished_succeeded   IN (true), itself partitioned by RANGE (finished_at):
--     scheduler_job_finished_<start>   one per range, made ahead and dropped after retention by the
--                                      nodes (src/cluster/history-partitioner.ts) through the two
--                                      functions below;
--     scheduler_job_finished_succeeded_default
--                                      a safety net for a row no range covers (a finished_at moved by
--                                      hand); pruned row by row.
--
-- Reads, moves and the dead letter queue name scheduler_job_finished only; the pruner names the two
-- partitions it prunes row by row (a previous release's pruner deletes through the parent). The parent has
-- no primary key (a partitioned table's key must hold its partition keys); ids stay unique because one
-- sequence hands them out, and every partition indexes id.
--
-- On a live database: the rename and the attach take the finished table's ACCESS EXCLUSIVE lock, and the
-- attach reads every finished row once to check the new column is empty, so completions wait for that read
-- (0.15 s for a million finished rows in memory on the project's machine; from disk, as long as reading the
-- table takes); claims and enqueues do not. Prune first to shorten it.

ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN time_partitioned boolean;

-- Every trigger on the finished table moves to the parent, which gives each partition (the old table, and
-- every time partition made later) its clone: pawl's two flow triggers (0005), and any a team added (an
-- audit or change-capture trigger), which would otherwise see only the rows partition. Each is dropped
-- here (its copy would collide with the parent's clone when the table is attached) and made again, from
-- its own definition, on the parent, which takes the table's name.
CREATE TEMP TABLE pawl_0016_triggers ON COMMIT DROP AS
  SELECT tgname::text AS name, pg_get_triggerdef(oid) AS def
  FROM pg_trigger
  WHERE tgrelid = '{{schema}}.scheduler_job_finished'::regclass AND NOT tgisinternal;
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT name FROM pg_temp.pawl_0016_triggers LOOP
    EXECUTE format('DROP TRIGGER %I ON {{schema}}.scheduler_job_finished', t.name);
  END LOOP;
END
$$;

ALTER TABLE {{schema}}.scheduler_job_finished RENAME TO scheduler_job_finished_rows;

CREATE TABLE {{schema}}.scheduler_job_finished
  (LIKE {{schema}}.scheduler_job_finished_rows INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
  PARTITION BY LIST (time_partitioned);

ALTER TABLE {{schema}}.scheduler_job_finished
  ATTACH PARTITION {{schema}}.scheduler_job_finished_rows FOR VALUES IN (NULL, false);

CREATE TABLE {{schema}}.scheduler_job_finished_succeeded
  PARTITION OF {{schema}}.scheduler_job_finished FOR VALUES IN (true)
  PARTITION BY RANGE (finished_at);

-- Every time partition gets these (partitioned indexes). By id: getJob, the dead letter queue's and the
-- flows' reads by id. The flow index: a flow's finished members (pawl.getFlow). The DEAD index matches
-- scheduler_job_finished_rows' so a dead letter read plans alike on every partition; it holds no entry.
-- BRIN on finished_at: a previous-release pruner's "finished before" reads, at no cost per insert.
CREATE INDEX scheduler_job_finished_succeeded_id_idx
  ON {{schema}}.scheduler_job_finished_succeeded (id);
CREATE INDEX scheduler_job_finished_succeeded_flow_idx
  ON {{schema}}.scheduler_job_finished_succeeded (flow_id, id)
  WHERE flow_id IS NOT NULL;
CREATE INDEX scheduler_job_finished_succeeded_dead_idx
  ON {{schema}}.scheduler_job_finished_succeeded (finished_at DESC, id DESC)
  WHERE status = 'DEAD';
CREATE INDEX scheduler_job_finished_succeeded_finished_brin
  ON {{schema}}.scheduler_job_finished_succeeded USING brin (finished_at);

CREATE TABLE {{schema}}.scheduler_job_finished_succeeded_default
  PARTITION OF {{schema}}.scheduler_job_finished_succeeded DEFAULT;
-- The default is pruned row by row, like scheduler_job_finished_rows, by an index like its pruning one.
CREATE INDEX scheduler_job_finished_succeeded_default_pruned_idx
  ON {{schema}}.scheduler_job_finished_succeeded_default (finished_at)
  WHERE status IN ('SUCCEEDED', 'CANCELED');

-- The triggers, on the parent (their definitions name scheduler_job_finished, now the parent).
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT def FROM pg_temp.pawl_0016_triggers LOOP
    EXECUTE t.def;
  END LOOP;
END
$$;

-- The view named the old table by its identity, which the rename kept: it now names the parent again.
-- 0011's definition, unchanged.
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT id, type, queue, payload, priority,
         CASE WHEN status = 'PENDING' AND picked_by IS NOT NULL THEN 'RUNNING' ELSE status END AS status,
         scheduled_time, attempts, max_attempts, timeout_ms, picked_by, picked_at, unique_key, errors, result,
         cancel_reason, created_at, updated_at, finished_at, flow_id, flow_step, deps_pending, flow_next,
         flow_inputs, signal_state, signal_payload, signal_deadline, signaled_at, paused_by, progress,
         trace_context, concurrency_key, concurrency_limit
  FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts, timeout_ms,
         picked_by, picked_at, unique_key, errors, result, cancel_reason, created_at, updated_at, finished_at,
         flow_id, flow_step, deps_pending, flow_next, flow_inputs, signal_state, signal_payload,
         signal_deadline, signaled_at, paused_by, progress, trace_context, concurrency_key, concurrency_limit
  FROM {{schema}}.scheduler_job_finished;

-- The time partitions that exist, written in the transaction that makes or drops each. A move into the
-- finished table marks a SUCCEEDED row time_partitioned only when a range here covers now(), so a row
-- never waits for, or lands in, the default because its range is missing or being attached.
CREATE TABLE {{schema}}.scheduler_job_finished_partition (
  range_start timestamptz PRIMARY KEY,
  range_end   timestamptz NOT NULL,
  CHECK (range_start < range_end)
);

-- Making and dropping a partition is DDL, which only the schema's owner may run; nodes run as an
-- application role (docs/deployment.md#roles). These two functions run as their owner (SECURITY DEFINER)
-- and do exactly one thing each, so the application role gets no other DDL. A short lock_timeout: the
-- attach and the drop take locks that completions and reads wait behind, so a function that cannot get
-- them at once fails (the node tries again next pass) rather than holding everyone up.

-- A time partition's name: its start in UTC, to the second (scheduler_job_finished_20261206t160000).
CREATE FUNCTION {{schema}}.pawl_finished_partition_name(range_start timestamptz)
RETURNS text
LANGUAGE sql STABLE
AS $$
  SELECT 'scheduler_job_finished_' || to_char(range_start AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS')
$$;

-- Makes the partition for [range_start, range_end): at most a day, named by its start.
CREATE FUNCTION {{schema}}.pawl_finished_partition_add(range_start timestamptz, range_end timestamptz)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
  part constant text := {{schema}}.pawl_finished_partition_name(range_start);
BEGIN
  IF range_start IS NULL OR range_end IS NULL OR range_end <= range_start
     OR range_end - range_start > interval '1 day' THEN
    RAISE EXCEPTION 'pawl: a history partition spans more than nothing and at most a day, not [%, %)',
      range_start, range_end USING ERRCODE = '22023';
  END IF;
  -- Made outside the tree and then attached: attaching takes the parent's SHARE UPDATE EXCLUSIVE lock,
  -- which completions (ROW EXCLUSIVE) do not wait for, where CREATE TABLE ... PARTITION OF takes ACCESS
  -- EXCLUSIVE. The attach gives the new table the parent's indexes and triggers.
  EXECUTE format(
    'CREATE TABLE {{schema}}.%I (LIKE {{schema}}.scheduler_job_finished_succeeded INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
    part);
  EXECUTE format(
    'ALTER TABLE {{schema}}.scheduler_job_finished_succeeded ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (%L) TO (%L)',
    part, range_start, range_end);
  INSERT INTO {{schema}}.scheduler_job_finished_partition (range_start, range_end)
  VALUES (range_start, range_end);
END
$$;

-- Drops the partition that starts at range_start, with its rows; returns how many rows it held, counted
-- before the drop takes its lock (so completions never wait for the count; a partition past retention
-- receives no row, so the count is exact for every drop the nodes make). Only a partition listed in
-- scheduler_job_finished_partition and attached under scheduler_job_finished_succeeded.
CREATE FUNCTION {{schema}}.pawl_finished_partition_drop(range_start timestamptz)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
  part constant text := {{schema}}.pawl_finished_partition_name(range_start);
  rel regclass;
  n bigint := 0;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.scheduler_job_finished_partition p WHERE p.range_start = $1) THEN
    RETURN 0;
  END IF;
  rel := to_regclass('{{schema}}.' || quote_ident(part));
  IF rel IS NOT NULL AND EXISTS (
    SELECT 1 FROM pg_inherits i
    WHERE i.inhrelid = rel AND i.inhparent = '{{schema}}.scheduler_job_finished_succeeded'::regclass
  ) THEN
    EXECUTE format('SELECT count(*) FROM {{schema}}.%I', part) INTO n;
    EXECUTE format('DROP TABLE {{schema}}.%I', part);
  END IF;
  DELETE FROM {{schema}}.scheduler_job_finished_partition p WHERE p.range_start = $1;
  RETURN n;
END
$$;

-- Only roles granted EXECUTE (the owner, and the application role through `pawl grants`) may call them.
REVOKE EXECUTE ON FUNCTION {{schema}}.pawl_finished_partition_add(timestamptz, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION {{schema}}.pawl_finished_partition_drop(timestamptz) FROM PUBLIC;

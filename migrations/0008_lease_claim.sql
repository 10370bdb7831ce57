-- pawl 0008: a claim that can be a HOT update (issue 16, docs/job-lifecycle.md#the-lease).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- A claim no longer writes status = 'RUNNING'. It sets a lease on the row: picked_by, picked_at (and counts
-- the attempt), and the row's status stays 'PENDING'. RUNNING is the derived state "PENDING with a lease"
-- (picked_by IS NOT NULL). No index covers these columns and no index predicate names them (the running
-- index on picked_by goes below), so PostgreSQL can make the claim a HOT update: the new row version goes
-- on the same heap page and no index gets a new entry (before, every claim wrote a new heap version plus
-- entries in the primary key and the running index). Claims skip leased rows (picked_by IS NULL); every
-- path that returns a job to PENDING (retry, snooze, hand-back, orphan recovery, dlq.retry, resume,
-- signal) clears the lease.
--
-- Readers: scheduler_job_all, which every read of pawl goes through, shows RUNNING for a leased row, as
-- before. A direct SQL reader of scheduler_job_queue.status sees PENDING for a running job: read
-- scheduler_job_all, or test picked_by IS NOT NULL.
--
-- Upgrade: stop or upgrade every node together (as for 0005): a node of an older pawl would write and
-- expect status = 'RUNNING'. Rows RUNNING at upgrade time are converted below (PENDING, lease kept), so a
-- node that upgrades with jobs in flight writes their outcomes as usual. The conversion takes row locks on
-- the running rows only and touches nothing else; the DROP INDEX takes the live table's ACCESS EXCLUSIVE
-- lock until the migration commits (claims wait that long).

-- The statement triggers of a pause (src/store/pause-sql.ts) hold newly PENDING rows of paused queues and
-- types. A claim now writes PENDING rows too, with a lease: those are running and must stay as they are.
-- Replaced first, so the conversion below (which those triggers see while a pause exists) leaves them.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_hold_paused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() > 1 THEN
    RETURN NULL;
  END IF;
  UPDATE {{schema}}.scheduler_job_queue j
  SET status = 'PAUSED', paused_by = {{schema}}.pawl_pause_rule(j.queue, j.type), updated_at = now()
  FROM pawl_changed c
  WHERE j.id = c.id AND c.status = 'PENDING' AND c.picked_by IS NULL
    AND j.status = 'PENDING' AND j.picked_by IS NULL
    AND {{schema}}.pawl_pause_rule(c.queue, c.type) IS NOT NULL;
  RETURN NULL;
END
$$;

-- A PENDING, WAITING or PAUSED row with picked_by set would read as leased once it is PENDING: before
-- this migration a PENDING row kept no lease on any pawl path, but a row written by hand might.
UPDATE {{schema}}.scheduler_job_queue
SET picked_by = NULL, picked_at = NULL
WHERE status <> 'RUNNING' AND picked_by IS NOT NULL;

-- Running rows keep their lease and become PENDING: they read RUNNING through scheduler_job_all, the
-- node that holds them writes their outcomes, and orphan recovery finds them if that node is gone.
UPDATE {{schema}}.scheduler_job_queue SET status = 'PENDING' WHERE status = 'RUNNING';

-- The running index named picked_by in its key (and status in its predicate): with it, no claim could be
-- HOT. Orphan recovery, the node reaper and the console's RUNNING count read the live table's PENDING
-- rows instead (the table holds only the backlog since 0005; the sweep runs on one node every few
-- seconds, the claim all the time).
DROP INDEX {{schema}}.scheduler_job_queue_running_idx;

-- Room on each page for the claim's new row versions: HOT needs the new version on the same page, and a
-- claim batch takes many rows of one page at once, before any old version can be pruned, with each new
-- version a little larger than the old (picked_by and picked_at are set). At 45 every claim of a 20,000-job
-- drain was HOT; at 50, 89%; at 60, 61% (docs/benchmarks.md, 2026-12-02). The cost is a live table about
-- twice as large per backlog row. The setting applies to pages written from now on: existing pages stay
-- as full as they are (their claims are not HOT) until their rows end and the space is reused, or a
-- VACUUM FULL / pg_repack rewrites the table.
ALTER TABLE {{schema}}.scheduler_job_queue SET (fillfactor = 45);

-- Every job as users see it: a leased live row is RUNNING. The columns are named, in the tables' order
-- (a column added to both tables later is appended here too, by recreating the view); CREATE OR REPLACE
-- keeps the names and types and changes only the status expression.
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT id, type, queue, payload, priority,
         CASE WHEN status = 'PENDING' AND picked_by IS NOT NULL THEN 'RUNNING' ELSE status END AS status,
         scheduled_time, attempts, max_attempts, timeout_ms, picked_by, picked_at, unique_key, errors, result,
         cancel_reason, created_at, updated_at, finished_at, flow_id, flow_step, deps_pending, flow_next,
         flow_inputs, signal_state, signal_payload, signal_deadline, signaled_at, paused_by, progress
  FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts, timeout_ms,
         picked_by, picked_at, unique_key, errors, result, cancel_reason, created_at, updated_at, finished_at,
         flow_id, flow_step, deps_pending, flow_next, flow_inputs, signal_state, signal_payload,
         signal_deadline, signaled_at, paused_by, progress
  FROM {{schema}}.scheduler_job_finished;

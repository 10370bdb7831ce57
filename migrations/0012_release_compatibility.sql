-- previous release: compatible (a 59bb164 node stays correct beside this schema)
--
-- Compatibility between releases (issue 25). Every migration from this one on starts with a line saying
-- whether nodes of the previous release stay correct beside it: `-- previous release: compatible`, or
-- `-- previous release: breaking (why)`. migrate() records a breaking one in pawl_migrations.breaking,
-- so a node of an older release that starts on such a schema refuses with SchemaVersionError instead of
-- misbehaving (a node reads the column without knowing whether it exists: see migrationStatus).
ALTER TABLE {{schema}}.pawl_migrations ADD COLUMN breaking boolean NOT NULL DEFAULT false;

-- RUNNING is no longer a stored state (since 0008 a running job is PENDING with a lease), but nodes from
-- before 0008 still wrote it: their claim checked only status = 'PENDING', so beside newer nodes they ran
-- jobs a second time, and a RUNNING row they left when they died was never recovered. Rows stored as
-- RUNNING become leases (PENDING, picked_by kept), which the orphan sweep recovers once their node is
-- dead, exactly as 0008 converted them; and the live table's check now names the states it holds, so a
-- pre-0008 node's claim fails at once instead of running anything.
UPDATE {{schema}}.scheduler_job_queue SET status = 'PENDING' WHERE status = 'RUNNING';

-- The check names every state the live table can hold: PENDING (with or without a lease), WAITING and
-- PAUSED, and the terminal states, which nodes from before 0005 wrote here (and which the flow trigger
-- of 0004 and every read still handle). Only RUNNING goes. NOT VALID checks new writes only, so adding it
-- scans nothing under the migration's lock; the UPDATE above already left no RUNNING row.
ALTER TABLE {{schema}}.scheduler_job_queue DROP CONSTRAINT scheduler_job_queue_status_check;
ALTER TABLE {{schema}}.scheduler_job_queue ADD CONSTRAINT scheduler_job_queue_status_check
  CHECK (status IN ('PENDING', 'WAITING', 'PAUSED', 'SUCCEEDED', 'CANCELED', 'DEAD')) NOT VALID;

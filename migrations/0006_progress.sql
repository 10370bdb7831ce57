-- pawl 0006: a running job's latest progress (issue 11, README "Progress").
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- ctx.progress(value) stores the newest value (a number 0-100 or a small JSON document, at most 4 KiB)
-- on the live row, throttled per attempt; the value is carried into scheduler_job_finished when the job
-- ends, so getJob shows the last progress of a finished job too. NULL: never reported.
--
-- Adding a nullable column without a default is a catalog change only (no rewrite, a brief ACCESS
-- EXCLUSIVE lock), so it is safe on a live database. Both tables get it last, in the same position, as
-- scheduler_job_all's `SELECT *` of both sides needs the same column order (migration 0005).
ALTER TABLE {{schema}}.scheduler_job_queue ADD COLUMN progress jsonb;
ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN progress jsonb;

-- A view's `*` was expanded when it was created: recreate it so it carries the new column. CREATE OR
-- REPLACE may only append columns, which is what this does.
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT * FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT * FROM {{schema}}.scheduler_job_finished;

-- pawl 0010: the trace context of the span that enqueued a job (issue 14, docs/tracing.md).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- With OpenTelemetry tracing on, enqueue stores the W3C trace context of its producer span (the
-- propagator's carrier: {"traceparent": "00-...", "tracestate": "..."}) and each attempt's consumer span
-- continues that trace. NULL: enqueued without tracing (tracing off, or the SQL enqueue() function, which
-- leaves it NULL): the attempt's span then starts a trace of its own.
--
-- A nullable column without a default is a catalog change only (no rewrite), safe on a live database.
-- Both tables get it last, in the same position, as scheduler_job_all's `SELECT *` of both sides needs
-- the same column order (migration 0005).
ALTER TABLE {{schema}}.scheduler_job_queue ADD COLUMN trace_context jsonb;
ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN trace_context jsonb;

-- A view's `*` was expanded when it was created: recreate it so it carries the new column (CREATE OR
-- REPLACE may only append columns, which is what this does).
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT * FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT * FROM {{schema}}.scheduler_job_finished;

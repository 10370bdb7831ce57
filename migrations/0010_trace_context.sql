-- pawl 0010: the trace context of the span that enqueued a job (issue 14, docs/tracing.md).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- With OpenTelemetry tracing on, enqueue stores the W3C trace context of its producer span (the
-- propagator's carrier: {"traceparent": "00-...", "tracestate": "..."}) and each attempt's consumer span
-- continues that trace. NULL: enqueued without tracing (tracing off, or the SQL enqueue() function, which
-- leaves it NULL): the attempt's span then starts a trace of its own.
--
-- A nullable column without a default is a catalog change only (no rewrite), safe on a live database.
-- Both tables get it last, in the same position: a move between them inserts by the tables' column order
-- (migration 0005).
ALTER TABLE {{schema}}.scheduler_job_queue ADD COLUMN trace_context jsonb;
ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN trace_context jsonb;

-- Recreate scheduler_job_all so it carries the new column: the column list of migration 0008 (whose CASE
-- shows a leased live row as RUNNING) with trace_context appended on both sides (CREATE OR REPLACE may only
-- append columns, which is what this does).
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT id, type, queue, payload, priority,
         CASE WHEN status = 'PENDING' AND picked_by IS NOT NULL THEN 'RUNNING' ELSE status END AS status,
         scheduled_time, attempts, max_attempts, timeout_ms, picked_by, picked_at, unique_key, errors, result,
         cancel_reason, created_at, updated_at, finished_at, flow_id, flow_step, deps_pending, flow_next,
         flow_inputs, signal_state, signal_payload, signal_deadline, signaled_at, paused_by, progress,
         trace_context
  FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts, timeout_ms,
         picked_by, picked_at, unique_key, errors, result, cancel_reason, created_at, updated_at, finished_at,
         flow_id, flow_step, deps_pending, flow_next, flow_inputs, signal_state, signal_payload,
         signal_deadline, signaled_at, paused_by, progress, trace_context
  FROM {{schema}}.scheduler_job_finished;

-- pawl 0003: claim cursors (docs/claim-cursors.md).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.

-- The floored discovery pass reads PENDING rows above an id floor, in id order. A range scan here starts
-- at the floor, so the dead index entries of rows claimed long ago (the "graveyard" a pinned xmin horizon
-- keeps alive) are never walked; the claim index cannot serve it without visiting every priority level.
-- For an existing large table, create it by hand first with
--   CREATE INDEX CONCURRENTLY scheduler_job_queue_pending_id_idx ON <schema>.scheduler_job_queue (id)
--     WHERE status = 'PENDING';
-- and this migration's IF NOT EXISTS leaves it be.
CREATE INDEX IF NOT EXISTS scheduler_job_queue_pending_id_idx
  ON {{schema}}.scheduler_job_queue (id)
  WHERE status = 'PENDING';

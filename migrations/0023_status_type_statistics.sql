-- previous release: compatible (adds planner statistics; no table, column or function changes)
--
-- pawl 0023: joint statistics on (status, type) of the live table, so the planner knows which types the
-- PENDING rows are (docs/durable.md#parked-jobs-and-the-claim).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- Durable handlers and machines park rows for days (status WAITING), often many of a few types. The
-- planner multiplies the per-column frequencies of `status = 'PENDING'` and `type = ANY(...)` as if they
-- were independent: with 100,000 parked rows of one type beside 1,000 PENDING rows of another, it
-- estimated 11 claimable rows instead of 1,000, and the claim's candidate scan left the claim index's
-- order for the PENDING-id index plus a sort of every PENDING row of the level (measured:
-- npm run bench -- --durable, 0.69 -> 0.82 ms per claim of 100; the sort grows with the backlog). A
-- multi-column MCV list records the pairs as they occur, so the estimate follows the PENDING rows' own
-- types and the claim keeps its index order.
CREATE STATISTICS IF NOT EXISTS {{schema}}.scheduler_job_queue_status_type (mcv)
  ON status, type FROM {{schema}}.scheduler_job_queue;

-- Statistics are empty until the table is analyzed. ANALYZE reads a fixed sample (300 rows per unit of
-- default_statistics_target, 30,000 by default), so this costs about the same on a large table, and a
-- server with autovacuum off gets the estimate now rather than never. Only the two columns: an upgrade
-- from 0.2.0 runs this in the transaction whose ALTER TABLE (0018) holds the table's exclusive lock until
-- commit, so the sample must not read the payloads too (a column list still builds the MCV list).
ANALYZE {{schema}}.scheduler_job_queue (status, type);

-- previous release: compatible (adds two nullable columns to scheduler_recurring; a 59bb164 node fires keyed schedules without their key)
--
-- pawl 0014: a recurring schedule may carry a concurrency key and limit (issue 27, docs/fairness.md), so
-- its fired children are keyed like any enqueued job. {{schema}} is replaced by the escaped schema name;
-- the runner applies this inside one transaction.
--
-- concurrency_key: the key every child of the schedule carries; NULL: none. concurrency_limit: the limit
-- the schedule states; NULL: the child's type default on the node that fires (as the queue and timeout
-- are), else none. The checks repeat src/input/concurrency-input.ts, which validates before any write; they
-- only keep a hand-written row from holding what schedule() would refuse.
--
-- A node of the previous release (59bb164) names its columns in every statement on this table, so it
-- never reads or writes these: its re-registration at boot leaves them as they are, and its fires enqueue
-- the children without the key. Those children are then claimed as unkeyed jobs, outside the limit, until
-- every node is upgraded.
ALTER TABLE {{schema}}.scheduler_recurring
  ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 500),
  ADD COLUMN concurrency_limit integer CHECK (concurrency_limit BETWEEN 1 AND 100000),
  ADD CONSTRAINT scheduler_recurring_limit_needs_key
    CHECK (concurrency_limit IS NULL OR concurrency_key IS NOT NULL);

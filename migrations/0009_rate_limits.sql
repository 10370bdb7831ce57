-- pawl 0009: rate limits across the cluster (docs/rate-limits.md): at most `limit` attempts of a key start
-- in any window of `per_ms`, an exact sliding log kept in the database.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.

-- One row per rate-limit key ('type:<type>', 'queue:<queue>' or 'key:<value>'). An admission locks its
-- keys' rows (FOR UPDATE, in key order), so admissions of one key are serialised across every node and
-- the count of its log cannot race. The row also keeps the key's last window and limit, for pruning and
-- for the read-only views (the console, explain, metrics), which know no key's configuration.
CREATE TABLE {{schema}}.scheduler_rate_limit (
  key          text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 300),
  max_starts   integer NOT NULL CHECK (max_starts >= 1),
  per_ms       bigint NOT NULL CHECK (per_ms >= 1),
  admitted_at  timestamptz NOT NULL DEFAULT now()
);

-- The sliding log: one row per admitted start (database time), for as long as it is in its key's window.
-- An admission deletes its keys' rows that left the window, so a key holds at most max_starts rows (plus
-- the ones that expired since its last admission, which the pruner removes); nothing else grows here.
CREATE TABLE {{schema}}.scheduler_rate_limit_start (
  key         text NOT NULL REFERENCES {{schema}}.scheduler_rate_limit (key) ON DELETE CASCADE,
  started_at  timestamptz NOT NULL,
  job_id      bigint NOT NULL
);
CREATE INDEX scheduler_rate_limit_start_key_idx
  ON {{schema}}.scheduler_rate_limit_start (key, started_at);

-- pawl 0001: the live job table, node registry and leases.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.

CREATE TABLE {{schema}}.scheduler_job_queue (
  id              bigserial PRIMARY KEY,
  type            text NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
  queue           text NOT NULL DEFAULT 'default' CHECK (length(queue) BETWEEN 1 AND 100),
  payload         jsonb NOT NULL DEFAULT '{}'::jsonb,
  priority        smallint NOT NULL DEFAULT 10 CHECK (priority BETWEEN 0 AND 100),
  status          text NOT NULL DEFAULT 'PENDING'
                  CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'CANCELED', 'DEAD')),
  scheduled_time  timestamptz NOT NULL DEFAULT now(),
  attempts        integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  timeout_ms      integer CHECK (timeout_ms > 0),
  picked_by       text,
  picked_at       timestamptz,
  unique_key      text,
  errors          jsonb NOT NULL DEFAULT '[]'::jsonb,
  result          jsonb,
  cancel_reason   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);

-- The claim path: one range scan per distinct priority, in (scheduled_time, id) order, over PENDING rows
-- only. Within one raw priority the age boost can only favour older rows, so this order is the claim
-- order inside a level; the claim merges the levels (see src/store/claim-jobs.ts).
CREATE INDEX scheduler_job_queue_claim_idx
  ON {{schema}}.scheduler_job_queue (priority DESC, scheduled_time, id)
  WHERE status = 'PENDING';

-- At most one live job per unique key.
CREATE UNIQUE INDEX scheduler_job_queue_unique_live_idx
  ON {{schema}}.scheduler_job_queue (unique_key)
  WHERE unique_key IS NOT NULL AND status IN ('PENDING', 'RUNNING');

-- Orphan recovery and shutdown look up a node's RUNNING rows.
CREATE INDEX scheduler_job_queue_running_idx
  ON {{schema}}.scheduler_job_queue (picked_by)
  WHERE status = 'RUNNING';

-- The dead letter queue is listed newest first.
CREATE INDEX scheduler_job_queue_dead_idx
  ON {{schema}}.scheduler_job_queue (finished_at DESC, id DESC)
  WHERE status = 'DEAD';

-- Pruning finds terminal rows by age.
CREATE INDEX scheduler_job_queue_finished_idx
  ON {{schema}}.scheduler_job_queue (finished_at)
  WHERE status IN ('SUCCEEDED', 'CANCELED');

CREATE TABLE {{schema}}.scheduler_node (
  node_id       text PRIMARY KEY,
  heartbeat_ts  timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz NOT NULL DEFAULT now(),
  node_info     jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE TABLE {{schema}}.scheduler_lock (
  lock_name   text PRIMARY KEY,
  owner_node  text NOT NULL,
  locked_at   timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);

-- Cluster-wide resource permits: one row per held permit, so a dead node's permits can be found and freed.
CREATE TABLE {{schema}}.scheduler_resource_permit (
  resource     text NOT NULL,
  job_id       bigint NOT NULL,
  node_id      text NOT NULL,
  acquired_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource, job_id)
);
CREATE INDEX scheduler_resource_permit_node_idx ON {{schema}}.scheduler_resource_permit (node_id);

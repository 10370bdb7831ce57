-- pawl 0002: recurring jobs (pawl.schedule). One row per schedule; each fire enqueues one child job.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.

CREATE TABLE {{schema}}.scheduler_recurring (
  name                text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
  cron                text NOT NULL CHECK (length(cron) BETWEEN 1 AND 200),
  timezone            text NOT NULL DEFAULT 'UTC',
  type                text NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
  payload             jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- NULL: the job type's default priority on the node that fires.
  priority            smallint CHECK (priority BETWEEN 0 AND 100),
  missed_fire_policy  text NOT NULL DEFAULT 'catch-up-one'
                      CHECK (missed_fire_policy IN ('skip', 'catch-up-one')),
  next_fire_at        timestamptz NOT NULL,
  last_fired_at       timestamptz,
  enabled             boolean NOT NULL DEFAULT true,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);

-- The scheduler claims due rows in fire order.
CREATE INDEX scheduler_recurring_due_idx
  ON {{schema}}.scheduler_recurring (next_fire_at)
  WHERE enabled;

-- previous release: compatible (adds two tables a 0.2.0 node never names; a machine's job row is an ordinary WAITING or PENDING row, and a 0.2.0 node's unnamed signal or sweep that wakes one early only makes it park again)
--
-- pawl 0020: durable machines (issue 42, docs/durable-machines.md): an xstate machine as a job, persisted
-- here between its events.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- The job row stays the unit the cluster runs: claimed while the machine has work, parked (WAITING,
-- signal_state 'waiting', the attempt given back, `signal_deadline` = its earliest timer) while it only
-- waits. What the machine is lives here: its persisted xstate snapshot and its pending `after` timers,
-- saved in the transaction that consumes the input that produced them.

-- One row per machine job. It is also the machine's lock: a send takes it to number its event, and the
-- machine takes it to consume an event, to park and to finish, so events are numbered in commit order and
-- no send can slip between a machine's last look at its inbox and its park.
-- No foreign key: the job row moves between the live and finished tables and is pruned by partition.
CREATE TABLE {{schema}}.scheduler_machine (
  job_id       bigint PRIMARY KEY,
  type         text NOT NULL,
  -- The registered definition the machine started on (registerMachine's `version`); it stays on it.
  -- NULL, with the snapshot, until the first run (a send may create the row before it).
  version      text,
  -- xstate's getPersistedSnapshot(), as JSON. NULL until the first run saves one (a send may come first).
  snapshot     jsonb,
  -- The pending `after` timers: [{ id, event, dueAt (epoch ms) }].
  timers       jsonb NOT NULL DEFAULT '[]',
  -- How many times each invoked actor has started (by invoke id): the occurrence in its step's key.
  occurrences  jsonb NOT NULL DEFAULT '{}',
  -- The last event sequence number handed out.
  last_seq     bigint NOT NULL DEFAULT 0,
  -- Set in the transaction that saved a final snapshot (or ended the machine otherwise): sends are refused.
  finished_at  timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The inbox and history of a machine's events. A send inserts one row, pending; the machine marks it
-- consumed (a transition took it) or ignored (its state did not accept it) in the transaction that saves
-- the snapshot it produced: exactly once.
CREATE TABLE {{schema}}.scheduler_machine_event (
  job_id       bigint NOT NULL,
  seq          bigint NOT NULL,
  event        jsonb NOT NULL,
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'consumed', 'ignored')),
  sent_at      timestamptz NOT NULL DEFAULT now(),
  handled_at   timestamptz,
  -- The state value after the event (consumed) or when it was refused (ignored), for the history.
  state_after  jsonb,
  PRIMARY KEY (job_id, seq)
);

-- A machine's pending events, oldest first. Handled events leave it, so it holds only the inboxes.
CREATE INDEX scheduler_machine_event_pending_idx
  ON {{schema}}.scheduler_machine_event (job_id, seq)
  WHERE status = 'pending';

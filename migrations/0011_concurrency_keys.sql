-- previous release: compatible (a 59bb164 node stays correct beside this schema, without enforcing keys)
--
-- pawl 0011: concurrency keys (issue 27, docs/fairness.md). {{schema}} is replaced by the escaped schema
-- name; the runner applies this inside one transaction.
--
-- A job may carry a concurrency key (any text, e.g. a tenant id) and a limit: at most that many jobs of the
-- key run at once, across every node. Both columns are nullable and new, so a node of the previous release
-- (59bb164) keeps reading and writing the table as before. What it does not do: its claim statement knows
-- nothing of keys, so it claims keyed jobs like any other, without the limit or the fairness. Its leases
-- are still counted (the triggers below run in the database, whoever writes), so the limit holds again for
-- every new node's claim as soon as the old node's jobs end. Upgrade every node to enforce limits.
ALTER TABLE {{schema}}.scheduler_job_queue ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer;
-- The finished table gets both too, last and in the same order, so a move keeps them (a dead job retried from
-- the dead letter queue keeps its key) and a move by the tables' column order (migration 0005) still lines up.
ALTER TABLE {{schema}}.scheduler_job_finished ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer;

-- scheduler_job_all carries them: 0010's column list with both appended on each side (CREATE OR REPLACE may
-- only append columns).
CREATE OR REPLACE VIEW {{schema}}.scheduler_job_all AS
  SELECT id, type, queue, payload, priority,
         CASE WHEN status = 'PENDING' AND picked_by IS NOT NULL THEN 'RUNNING' ELSE status END AS status,
         scheduled_time, attempts, max_attempts, timeout_ms, picked_by, picked_at, unique_key, errors, result,
         cancel_reason, created_at, updated_at, finished_at, flow_id, flow_step, deps_pending, flow_next,
         flow_inputs, signal_state, signal_payload, signal_deadline, signaled_at, paused_by, progress,
         trace_context, concurrency_key, concurrency_limit
  FROM {{schema}}.scheduler_job_queue
  UNION ALL
  SELECT id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts, timeout_ms,
         picked_by, picked_at, unique_key, errors, result, cancel_reason, created_at, updated_at, finished_at,
         flow_id, flow_step, deps_pending, flow_next, flow_inputs, signal_state, signal_payload,
         signal_deadline, signaled_at, paused_by, progress, trace_context, concurrency_key, concurrency_limit
  FROM {{schema}}.scheduler_job_finished;

-- The keyed claim walks this index: the keys with PENDING rows (a skip scan), then each key's rows in
-- (priority, scheduled_time, id) order. It names no lease column, so a claim stays a HOT update (0008).
CREATE INDEX IF NOT EXISTS scheduler_job_queue_keyed_idx
  ON {{schema}}.scheduler_job_queue (concurrency_key, priority DESC, scheduled_time, id)
  WHERE status = 'PENDING' AND concurrency_key IS NOT NULL;

-- How many jobs of a key run: the sum of this table's deltas for the key. A trigger writes +1 when a keyed
-- row gains a lease and -1 when it loses it (outcome, retry, snooze, cancel, hand-back, orphan recovery,
-- the DELETE that moves a finished row out), in the transaction that changes the row, so the count is
-- kept with the rows and cannot drift, whichever node or release writes. Why deltas and not one counter
-- row per key: inserts never wait on each other, so two nodes writing outcomes of jobs of the same keys in
-- different orders cannot deadlock on counter rows. Why not count leased rows directly: any index naming
-- picked_by would make every claim a non-HOT update (0008), and without one a count reads the key's whole
-- backlog. The keyed claim folds a key's deltas into one row while it holds the key's lock.
CREATE TABLE {{schema}}.scheduler_concurrency_running (
  concurrency_key text NOT NULL,
  delta integer NOT NULL
);
CREATE INDEX scheduler_concurrency_running_key_idx ON {{schema}}.scheduler_concurrency_running (concurrency_key);

CREATE FUNCTION {{schema}}.pawl_count_lease() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  was integer := 0;
  is_now integer := 0;
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status = 'PENDING' AND OLD.picked_by IS NOT NULL THEN
    was := 1;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'PENDING' AND NEW.picked_by IS NOT NULL THEN
    is_now := 1;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.concurrency_key IS DISTINCT FROM NEW.concurrency_key THEN
    -- A key changed by hand: the old key loses what it had, the new key gains what it has.
    IF was = 1 AND OLD.concurrency_key IS NOT NULL THEN
      INSERT INTO {{schema}}.scheduler_concurrency_running VALUES (OLD.concurrency_key, -1);
    END IF;
    IF is_now = 1 AND NEW.concurrency_key IS NOT NULL THEN
      INSERT INTO {{schema}}.scheduler_concurrency_running VALUES (NEW.concurrency_key, 1);
    END IF;
  ELSIF is_now <> was THEN
    INSERT INTO {{schema}}.scheduler_concurrency_running
    VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.concurrency_key ELSE NEW.concurrency_key END, is_now - was);
  END IF;
  RETURN NULL;
END
$$;

-- The WHEN clauses keep unkeyed rows off the trigger entirely (no function call per claimed row).
CREATE TRIGGER pawl_count_lease_update AFTER UPDATE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN ((OLD.concurrency_key IS NOT NULL OR NEW.concurrency_key IS NOT NULL)
    AND (OLD.picked_by IS DISTINCT FROM NEW.picked_by OR OLD.status IS DISTINCT FROM NEW.status
         OR OLD.concurrency_key IS DISTINCT FROM NEW.concurrency_key))
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();
CREATE TRIGGER pawl_count_lease_delete AFTER DELETE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (OLD.concurrency_key IS NOT NULL AND OLD.picked_by IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();
CREATE TRIGGER pawl_count_lease_insert AFTER INSERT ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND NEW.picked_by IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();

-- Jobs of key k running now (what explain and the metrics show; the claim counts under the key's lock).
CREATE FUNCTION {{schema}}.pawl_key_running(k text) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(delta), 0)::int FROM {{schema}}.scheduler_concurrency_running WHERE concurrency_key = k
$$;

-- The keyed claim (src/store/claim/keyed-claim.ts calls it; docs/fairness.md explains the order).
--
-- 1. Candidates: the keys with PENDING rows (a skip scan of the keyed index), and for each key its first
--    few claimable due rows of the node's types (and queue) in (priority DESC, scheduled_time, id) order.
--    They are ranked in rounds: every key's best row first (round 1), then every key's second row, and so
--    on; within a round by effective priority (priority plus the age boost), scheduled time and id. So a
--    backlog of one key delays another key's jobs by at most one round, and priority orders the jobs of
--    a key, and the keys within a round.
-- 2. For each candidate in that order: the first time a key comes up, pg_try_advisory_xact_lock on the
--    key's hash (class 0x7061776c, "pawl"). That lock is the key's serialisation point: it is held until
--    this claim commits, and the count below is read in a statement that starts after the lock was
--    granted (a PL/pgSQL statement takes a fresh snapshot), so it sees every earlier claim of the key.
--    A key another claimer holds is skipped this time (no waiting, so no deadlock); its holder claims it.
-- 3. A row starts only while fewer than its own concurrency_limit jobs of its key run (counting the rows
--    this claim took before it); a row without a limit starts regardless. Rows of a key are taken in
--    order: once one is refused, the key's later rows wait too, so a key's priority order is kept.
-- 4. The rows taken are locked (FOR UPDATE SKIP LOCKED, rechecked claimable) and leased in one UPDATE at
--    the end, like the unkeyed claim: status stays PENDING, picked_by set, attempt counted (0008). A row
--    another writer holds is skipped: the claim takes fewer, never more.
CREATE FUNCTION {{schema}}.pawl_claim_keyed(p_limit integer, p_node text, p_types text[], p_boost_ms bigint,
                                            p_queue text, p_now timestamptz)
RETURNS SETOF {{schema}}.scheduler_job_queue
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  t_now constant timestamptz := coalesce(p_now, now());
  n_keys integer;
  all_keys text[];
  per_key integer;
  c record;
  keys text[] := '{}';
  key_state integer[] := '{}';   -- per key: -1 locked by another claimer, -2 refused (at its limit), else 0
  key_running integer[] := '{}'; -- per key: running before this claim (NULL until a limited row needs it)
  key_taken integer[] := '{}';   -- per key: rows this claim took
  i integer;
  taken bigint[] := '{}';
BEGIN
  IF p_limit <= 0 THEN
    RETURN;
  END IF;
  -- The keys with PENDING rows: one skip scan of the keyed index.
  WITH RECURSIVE k(key) AS (
    (SELECT concurrency_key FROM {{schema}}.scheduler_job_queue
     WHERE status = 'PENDING' AND concurrency_key IS NOT NULL ORDER BY concurrency_key LIMIT 1)
    UNION ALL
    SELECT (SELECT j.concurrency_key FROM {{schema}}.scheduler_job_queue j
            WHERE j.status = 'PENDING' AND j.concurrency_key IS NOT NULL AND j.concurrency_key > k.key
            ORDER BY j.concurrency_key LIMIT 1)
    FROM k WHERE k.key IS NOT NULL
  )
  SELECT coalesce(array_agg(key), '{}') INTO all_keys FROM k WHERE key IS NOT NULL;
  n_keys := coalesce(array_length(all_keys, 1), 0);
  IF n_keys = 0 THEN
    RETURN;
  END IF;
  -- Enough rows per key for the rounds a claim of p_limit can reach (twice that, for keys refused), and
  -- never more than 16 of one key: a node's buffer then holds few jobs of a key with a backlog, so a
  -- key that shows up later is not queued locally behind hundreds of them.
  per_key := least(p_limit, 16, greatest(2, ceil(2.0 * p_limit / n_keys)::int));
  FOR c IN
    WITH k(key) AS (SELECT unnest(all_keys)),
    cand AS (
      SELECT r.id, r.concurrency_key, r.concurrency_limit, r.scheduled_time,
             r.priority + CASE WHEN p_boost_ms > 0
               THEN floor(greatest(0, extract(epoch FROM t_now - r.scheduled_time) * 1000) / p_boost_ms)::int
               ELSE 0 END AS effective,
             row_number() OVER (PARTITION BY r.concurrency_key
                                ORDER BY r.priority DESC, r.scheduled_time, r.id) AS round
      FROM k CROSS JOIN LATERAL (
        SELECT j.id, j.concurrency_key, j.concurrency_limit, j.priority, j.scheduled_time
        FROM {{schema}}.scheduler_job_queue j
        WHERE j.status = 'PENDING' AND j.concurrency_key = k.key AND j.picked_by IS NULL
          AND j.scheduled_time <= t_now AND j.type = ANY(p_types)
          AND (p_queue IS NULL OR j.queue = p_queue)
        ORDER BY j.priority DESC, j.scheduled_time, j.id
        LIMIT per_key
      ) r
    )
    SELECT * FROM cand ORDER BY round, effective DESC, scheduled_time, id
  LOOP
    EXIT WHEN coalesce(array_length(taken, 1), 0) >= p_limit;
    i := array_position(keys, c.concurrency_key);
    IF i IS NULL THEN
      keys := keys || c.concurrency_key;
      i := array_length(keys, 1);
      key_state := key_state || CASE
        WHEN pg_try_advisory_xact_lock(1885435756, hashtext(c.concurrency_key)) THEN 0 ELSE -1 END;
      key_running := key_running || NULL::integer;
      key_taken := key_taken || 0;
    END IF;
    CONTINUE WHEN key_state[i] < 0;
    IF c.concurrency_limit IS NOT NULL THEN
      -- Counted only when a limited row needs it (a key without limits costs no count), still under the
      -- key's lock, so the count sees every earlier claim of the key.
      IF key_running[i] IS NULL THEN
        key_running[i] := {{schema}}.pawl_key_running(c.concurrency_key);
      END IF;
      IF key_running[i] + key_taken[i] >= c.concurrency_limit THEN
        key_state[i] := -2;
        CONTINUE;
      END IF;
    END IF;
    -- No row lock yet: while this claim holds the key's lock no other new claimer takes the key's rows;
    -- the final UPDATE locks them, skipping any another writer (a cancel, an old node) holds.
    taken := taken || c.id;
    key_taken[i] := key_taken[i] + 1;
  END LOOP;
  -- Fold the deltas of the keys this claim holds into one row each, so a count stays a short read. Only
  -- the lock holder folds; deltas that commit meanwhile are not in this DELETE's snapshot and stay.
  FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
    CONTINUE WHEN key_state[i] = -1;
    -- A key that was counted is folded when it has many deltas; a key without limits (never counted) only
    -- now and then when this claim took its rows, so its deltas stay few without a read per key per claim.
    CONTINUE WHEN key_running[i] IS NULL AND (key_taken[i] = 0 OR random() >= 0.0625);
    IF (SELECT count(*) FROM {{schema}}.scheduler_concurrency_running WHERE concurrency_key = keys[i]) > 4 THEN
      WITH gone AS (
        DELETE FROM {{schema}}.scheduler_concurrency_running WHERE concurrency_key = keys[i] RETURNING delta
      )
      INSERT INTO {{schema}}.scheduler_concurrency_running
      SELECT keys[i], sum(delta) FROM gone HAVING sum(delta) <> 0;
    END IF;
  END LOOP;
  IF coalesce(array_length(taken, 1), 0) = 0 THEN
    RETURN;
  END IF;
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
    UPDATE {{schema}}.scheduler_job_queue j
    SET picked_by = p_node, picked_at = now(), attempts = j.attempts + 1, updated_at = now()
    WHERE j.id = ANY(ARRAY(
      SELECT x.id FROM {{schema}}.scheduler_job_queue x
      WHERE x.id = ANY(taken) AND x.status = 'PENDING' AND x.picked_by IS NULL
      FOR UPDATE SKIP LOCKED))
    RETURNING j.*;
END
$$;

CREATE OR REPLACE FUNCTION {{schema}}.enqueue(type text, payload jsonb DEFAULT '{}', options jsonb DEFAULT '{}')
RETURNS TABLE (job_id bigint, inserted boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  known constant text[] := ARRAY['priority', 'delayMs', 'runAt', 'timeoutMs', 'maxAttempts', 'uniqueKey', 'queue',
                                 'concurrencyKey', 'concurrencyLimit'];
  -- JavaScript's /[\s\p{Cc}]/u: every Unicode space and every control character (NUL cannot occur in text).
  bad_name constant text := '[\u0001-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]';
  o jsonb := coalesce(options, '{}'::jsonb);
  p jsonb := coalesce(payload, '{}'::jsonb);
  k text;
  v jsonb;
  n numeric;
  v_delay_ms bigint := 0;
  v_run_at timestamptz;
  v_unique_key text;
  q text := 'default';
  prio integer := 10;
  v_timeout_ms integer;
  v_attempts integer := 25;
  bytes integer;
  v_id bigint;
  v_scheduled timestamptz;
  v_ckey text;
  v_climit integer;
BEGIN
  IF enqueue.type IS NULL OR {{schema}}.pawl_utf16_length(enqueue.type) NOT BETWEEN 1 AND 200
     OR enqueue.type ~ bad_name THEN
    PERFORM {{schema}}.pawl_refuse('INVALID_JOB_TYPE', format(
      'invalid job type %s: use 1-200 characters without spaces or control characters',
      coalesce(to_json(enqueue.type)::text, 'null')));
  END IF;
  IF jsonb_typeof(o) <> 'object' THEN
    PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', 'enqueue options must be an object');
  END IF;
  FOR k IN SELECT jsonb_object_keys(o) LOOP
    IF NOT k = ANY(known) THEN
      PERFORM {{schema}}.pawl_refuse('UNKNOWN_OPTION', format('unknown enqueue option %s; known: %s',
        to_json(k)::text, array_to_string(known, ', ')));
    END IF;
  END LOOP;

  -- The payload: jsonb holds only JSON, so what is left of pawl's checks is depth and size. A container
  -- at jsonpath level 100 is 101 deep in pawl's count, where the root is 1.
  IF jsonb_path_exists(p, 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")') THEN
    PERFORM {{schema}}.pawl_refuse('INVALID_PAYLOAD',
      'payload is not JSON: it is nested deeper than 100 levels');
  END IF;
  bytes := octet_length(p::text);
  IF bytes > 262144 THEN
    PERFORM {{schema}}.pawl_refuse('PAYLOAD_TOO_LARGE', format(
      'payload is %s bytes of JSON, over the limit of 262144 (maxPayloadBytes)', bytes));
  END IF;

  IF o ? 'delayMs' AND o ? 'runAt' THEN
    PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', 'give delayMs or runAt, not both');
  END IF;
  IF o ? 'delayMs' THEN
    v := o -> 'delayMs';
    IF jsonb_typeof(v) <> 'number' OR (v #>> '{}')::numeric < 0 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid delayMs %s: use a finite number of milliseconds >= 0', {{schema}}.pawl_describe(v)));
    END IF;
    v_delay_ms := round((v #>> '{}')::numeric);
  END IF;
  IF o ? 'runAt' THEN
    v := o -> 'runAt';
    BEGIN
      v_run_at := (v #>> '{}')::timestamptz;
    EXCEPTION WHEN data_exception THEN
      v_run_at := NULL;
    END;
    IF jsonb_typeof(v) <> 'string' OR v_run_at IS NULL OR NOT isfinite(v_run_at) THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid runAt %s: use an ISO 8601 time', {{schema}}.pawl_describe(v)));
    END IF;
  END IF;
  IF o ? 'uniqueKey' THEN
    v := o -> 'uniqueKey';
    IF jsonb_typeof(v) <> 'string' THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid uniqueKey %s: use a string', {{schema}}.pawl_describe(v)));
    END IF;
    v_unique_key := v #>> '{}';
    IF {{schema}}.pawl_utf16_length(v_unique_key) NOT BETWEEN 1 AND 500 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid uniqueKey %s: use a string of 1-500 characters', {{schema}}.pawl_describe(v)));
    END IF;
  END IF;

  -- As in TypeScript (`o.queue ?? default`), a JSON null is the same as leaving the option out.
  v := o -> 'queue';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    q := v #>> '{}';
    IF jsonb_typeof(v) <> 'string' OR {{schema}}.pawl_utf16_length(q) NOT BETWEEN 1 AND 100 OR q ~ bad_name THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid queue %s: use 1-100 characters without spaces or control characters',
        {{schema}}.pawl_describe(v)));
    END IF;
  END IF;
  v := o -> 'priority';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    IF jsonb_typeof(v) = 'string' AND v #>> '{}' IN ('low', 'normal', 'high', 'critical') THEN
      prio := CASE v #>> '{}' WHEN 'low' THEN 0 WHEN 'normal' THEN 10 WHEN 'high' THEN 20 ELSE 30 END;
    ELSIF jsonb_typeof(v) = 'number' AND (v #>> '{}')::numeric BETWEEN 0 AND 100
          AND (v #>> '{}')::numeric = trunc((v #>> '{}')::numeric) THEN
      prio := (v #>> '{}')::numeric;
    ELSE
      PERFORM {{schema}}.pawl_refuse('INVALID_PRIORITY', format(
        'invalid priority %s: use an integer from 0 to 100 or one of low, normal, high, critical',
        {{schema}}.pawl_describe(v)));
    END IF;
  END IF;
  v := o -> 'timeoutMs';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    n := CASE WHEN jsonb_typeof(v) = 'number' THEN (v #>> '{}')::numeric END;
    IF n IS NULL OR n <> trunc(n) OR n NOT BETWEEN 1 AND 2147483647 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid timeoutMs %s: use an integer from 1 to 2147483647', {{schema}}.pawl_describe(v)));
    END IF;
    v_timeout_ms := n;
  END IF;
  v := o -> 'maxAttempts';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    n := CASE WHEN jsonb_typeof(v) = 'number' THEN (v #>> '{}')::numeric END;
    IF n IS NULL OR n <> trunc(n) OR n NOT BETWEEN 1 AND 1000 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid maxAttempts %s: use an integer from 1 to 1000', {{schema}}.pawl_describe(v)));
    END IF;
    v_attempts := n;
  END IF;

  -- The concurrency key and limit (0011, docs/fairness.md): the rules of src/input/concurrency-input.ts.
  v := o -> 'concurrencyKey';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    IF jsonb_typeof(v) <> 'string' OR {{schema}}.pawl_utf16_length(v #>> '{}') NOT BETWEEN 1 AND 500 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid concurrencyKey %s: use a string of 1-500 characters', {{schema}}.pawl_describe(v)));
    END IF;
    v_ckey := v #>> '{}';
  END IF;
  v := o -> 'concurrencyLimit';
  IF v IS NOT NULL AND v <> 'null'::jsonb THEN
    n := CASE WHEN jsonb_typeof(v) = 'number' THEN (v #>> '{}')::numeric END;
    IF n IS NULL OR n <> trunc(n) OR n NOT BETWEEN 1 AND 100000 THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', format(
        'invalid concurrencyLimit %s: use an integer from 1 to 100000', {{schema}}.pawl_describe(v)));
    END IF;
    IF v_ckey IS NULL THEN
      PERFORM {{schema}}.pawl_refuse('INVALID_OPTION', 'concurrencyLimit needs a concurrencyKey');
    END IF;
    v_climit := n;
  END IF;

  -- The unique-key rule of src/store/enqueue-jobs.ts: insert unless a live row holds the key, else return
  -- that row; a few rounds cover the live row finishing between the insert and the look-up.
  FOR attempt_round IN 1..5 LOOP
    INSERT INTO {{schema}}.scheduler_job_queue AS j
      (type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, unique_key, concurrency_key,
       concurrency_limit)
    VALUES (enqueue.type, q, p, prio, coalesce(v_run_at, now() + v_delay_ms * interval '1 millisecond'),
            v_timeout_ms, v_attempts, v_unique_key, v_ckey, v_climit)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('PENDING', 'RUNNING') DO NOTHING
    RETURNING j.id, j.scheduled_time INTO v_id, v_scheduled;
    IF v_id IS NOT NULL THEN
      -- src/enqueue-hints.ts's urgentHint for one job: critical, or due within 5 ms of now.
      IF prio >= 30 OR v_scheduled <= now() + interval '5 milliseconds' THEN
        PERFORM pg_notify({{schema}}.pawl_wakeup_channel(btrim('{{schema}}', '"')), format(
          '{"pawl":1,"kind":"work","priority":%s,"source":"sql","target":%s}', prio, to_json(enqueue.type)::text));
      END IF;
      RETURN QUERY SELECT v_id, true;
      RETURN;
    END IF;
    SELECT j.id INTO v_id FROM {{schema}}.scheduler_job_queue j
    WHERE j.unique_key = v_unique_key AND j.status IN ('PENDING', 'RUNNING');
    IF v_id IS NOT NULL THEN
      RETURN QUERY SELECT v_id, false;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'pawl: enqueue could not settle unique keys after 5 rounds (heavy contention on one key)';
END
$$;

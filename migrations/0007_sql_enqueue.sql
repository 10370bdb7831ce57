-- pawl 0007: enqueue from any client (issue 11, docs/sql-enqueue.md): {{schema}}.enqueue(type, payload,
-- options), callable from psql, a query builder, an ORM or another language, inside the caller's
-- transaction. {{schema}} is replaced by the escaped schema name; the runner applies this inside one
-- transaction.
--
-- It applies the rules of pawl.enqueue (src/enqueue-input.ts), in the same order and with the same
-- messages, so a bad call is refused the same way from either door and nothing is written:
-- test/integration/sql-enqueue.test.ts runs one table of bad inputs through both. The refusal is an
-- exception with SQLSTATE 22023 (invalid_parameter_value), the TypeScript message as its MESSAGE and the
-- ValidationError code (INVALID_JOB_TYPE, INVALID_OPTION...) as its DETAIL. What SQL cannot mirror: a
-- registered type's defaults and validator are unknown here (the validator still runs before each
-- attempt), runAt is an ISO 8601 string rather than a Date, and the payload limit is the default
-- maxPayloadBytes (256 KiB) measured on PostgreSQL's text of the jsonb.

-- How many UTF-16 code units `s` has: JavaScript's `length`, which pawl's limits count. length() counts
-- code points, and a character beyond U+FFFF is two units in JavaScript.
CREATE FUNCTION {{schema}}.pawl_utf16_length(s text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT length(s) + length(regexp_replace(s, '[^\U00010000-\U0010FFFF]', '', 'g'))
$$;

-- The postgres coordinator's wakeup channel of a schema: postgresChannelName() in
-- coordinators/postgres/postgres-config.ts, `pawl_<schema>_wakeup`, shortened with 8 hex digits of the
-- schema's sha256 when it would pass PostgreSQL's 63-byte identifier limit.
CREATE FUNCTION {{schema}}.pawl_wakeup_channel(schema_name text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE
    WHEN octet_length('pawl_' || schema_name || '_wakeup') <= 63 THEN 'pawl_' || schema_name || '_wakeup'
    ELSE 'pawl_' || left(schema_name, 36) || '_'
         || left(encode(sha256(convert_to(schema_name, 'UTF8')), 'hex'), 8) || '_wakeup'
  END
$$;

-- A refusal, shaped like pawl's ValidationError: the message, and the code as DETAIL.
CREATE FUNCTION {{schema}}.pawl_refuse(code text, message text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = message, DETAIL = code;
END
$$;

-- describeValue() of src/input-text.ts for a JSON value (JSON.stringify's text for scalars).
CREATE FUNCTION {{schema}}.pawl_describe(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(v::text, 'undefined')
$$;

-- Enqueues one job; returns its id and whether it was inserted (false: a live PENDING or RUNNING job
-- holds the unique key, and that job's id is returned). Options are pawl.enqueue's, in camelCase:
-- priority, delayMs, runAt (an ISO 8601 string), timeoutMs, maxAttempts, uniqueKey, queue.
--
-- Wakeup: like pawl.enqueue of a node with the postgres coordinator, an urgent job (critical priority, or
-- due now) sends the coordinator's hint on the schema's wakeup channel with pg_notify, delivered when the
-- caller's transaction commits and never after a rollback. A job that was not inserted wakes nobody.
CREATE FUNCTION {{schema}}.enqueue(type text, payload jsonb DEFAULT '{}', options jsonb DEFAULT '{}')
RETURNS TABLE (job_id bigint, inserted boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  known constant text[] := ARRAY['priority', 'delayMs', 'runAt', 'timeoutMs', 'maxAttempts', 'uniqueKey', 'queue'];
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

  -- The unique-key rule of src/store/enqueue-jobs.ts: insert unless a live row holds the key, else return
  -- that row; a few rounds cover the live row finishing between the insert and the look-up.
  FOR attempt_round IN 1..5 LOOP
    INSERT INTO {{schema}}.scheduler_job_queue AS j
      (type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, unique_key)
    VALUES (enqueue.type, q, p, prio, coalesce(v_run_at, now() + v_delay_ms * interval '1 millisecond'),
            v_timeout_ms, v_attempts, v_unique_key)
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

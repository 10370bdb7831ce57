-- previous release: compatible (adds a function; 0011's pawl_claim_keyed keeps its signature and rows)
--
-- pawl 0013: the keyed claim in a rotating window of keys, set-based (issue 27, docs/fairness.md).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- Why a second claim function: 0011's pawl_claim_keyed visits every key with PENDING rows on every claim
-- and decides row by row in PL/pgSQL, so with 1,000 keys a claim of 10 jobs read 1,000 keys and 2,000
-- candidate rows, and keyed jobs ran at 0.4x the rate of unkeyed ones. This one reads a window of
-- ceil(limit / 4) keys (at most 64), starting after the key the node's previous keyed claim stopped at
-- (p_after) and wrapping around, and decides the whole window in one statement. Round robin across keys
-- therefore happens across claims: each claim serves the next keys in turn. 0011's function becomes a
-- call of this one without a cursor (its window is then always the first keys), so a node that still
-- calls it enforces the same limits under the same locks: one claim path in the database.
--
-- Only jobs with a limit count (a change of 0011's rule): a job without a limit neither waits for a slot
-- nor takes one. 0011 counted every leased keyed row, so a key used only for fairness paid a trigger call
-- and a delta row on every claim and every outcome for a count nothing read: half the keyed claim's time.
-- The lease triggers below are replaced accordingly and the deltas recounted from the rows.
--
-- The key locks are now per schema: 0011 took (0x7061776c, hashtext(key)), a class shared by every pawl
-- schema of the database, so two schemas (two apps, or tests) with a key of the same name skipped each
-- other's key. The class is now hashtext of the schema's quoted name.
--
-- 1. The window: the next keys after p_after in key order that can start a job now (a skip scan of the
--    keyed index, one probe per key, and a look at the key's first claimable row and running count),
--    wrapping to the first keys when the end is reached. Keys whose rows all run, are not due, or are at
--    their limit take no place in the window, so a window is spent on keys that can run.
-- 2. Serialisation point, as in 0011: pg_try_advisory_xact_lock on each window key's hash (class: the hash
--    of the schema's name), held until this claim commits. A key another claimer holds is skipped this time.
-- 3. One statement, whose snapshot starts after the locks were granted (a PL/pgSQL statement takes a fresh
--    snapshot), so the counts it reads include every earlier claim of these keys:
--    - each locked key's first claimable due rows of the node's types (and queue), in (priority DESC,
--      scheduled_time, id) order, numbered by round (the key's 1st, 2nd, ... row);
--    - the key's running count (the sum of its deltas), read only for keys with a limited candidate;
--    - a row may start while running + (rows with a limit of its key taken before it) < its own limit; rows
--      of a key are taken in order and the first refused one stops the key (a running AND over its rounds);
--    - the allowed rows, ordered by round, then effective priority (priority plus age boost), scheduled
--      time and id, up to p_limit, are locked FOR UPDATE SKIP LOCKED and leased in one UPDATE. A row
--      another writer holds is skipped: the claim takes fewer, never more.
-- 4. Now and then (one key in eight per claim) a locked key's deltas are folded into one row, so a count
--    stays a short read; only the lock holder folds, and deltas committed meanwhile are not in its snapshot.
--
-- Returns the leased rows, each with the window's last key (the node passes it back as p_after next
-- time), or one row (NULL, last key) when nothing was leased, or (NULL, p_after or '') when no key can
-- start a job, or (NULL, NULL) when no keyed row is PENDING at all.
CREATE FUNCTION {{schema}}.pawl_claim_keys(p_limit integer, p_node text, p_types text[], p_boost_ms bigint,
                                           p_queue text, p_now timestamptz, p_after text)
RETURNS TABLE (claimed_job {{schema}}.scheduler_job_queue, claim_next_key text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  t_now constant timestamptz := coalesce(p_now, now());
  -- Keys per claim: each costs a probe of the keyed index and a look at its first row, so a claim reads a
  -- quarter as many keys as it may take jobs (then several rows per key in rounds). Fewer keys per claim
  -- made claims cheaper (20,000 jobs over 1,000 keys, claims of 67: 64 us of claim per job with a window
  -- of 32 keys, 34-43 with 17) and rotation slower: a key waits ceil(keys / window) claims for its turn.
  w integer := least(greatest(ceil(p_limit / 4.0)::int, 1), 64);
  ks text[];
  locked text[];
  per_key integer;
  v_next text;
BEGIN
  -- The window, in one statement: the keys in ring order (after p_after in key order, then wrapped
  -- around up to and including p_after; `n` counts the steps), each kept when it can start a job now:
  -- its first claimable row in the key's order exists and has no limit, or fewer than its limit of the
  -- key's jobs run. That check is read without the key's lock: it only chooses the window (a key at its
  -- limit or with nothing due takes no place in it); the claim decides again under the lock. The
  -- recursive scan is read lazily and stops once the window is full. OFFSET 0 keeps each step's probes
  -- subqueries of their own: flattened, a probe ran again for every reference to its result. The walk
  -- starts from a seed row that is not a key of the window (n = 0): p_after, or '' (which sorts before
  -- every key; keys are never empty).
  WITH RECURSIVE k(key, wrapped, n) AS (
    SELECT coalesce(p_after, ''), false, 0
    UNION ALL
    SELECT nx.key, nx.wrapped, k.n + 1
    FROM k
    CROSS JOIN LATERAL (
      SELECT (SELECT j.concurrency_key FROM {{schema}}.scheduler_job_queue j
              WHERE j.status = 'PENDING' AND j.concurrency_key IS NOT NULL AND j.concurrency_key > k.key
              ORDER BY j.concurrency_key LIMIT 1) AS key OFFSET 0) a
    CROSS JOIN LATERAL (
      SELECT coalesce(a.key, CASE WHEN NOT k.wrapped AND p_after IS NOT NULL THEN
               (SELECT j.concurrency_key FROM {{schema}}.scheduler_job_queue j
                WHERE j.status = 'PENDING' AND j.concurrency_key IS NOT NULL
                ORDER BY j.concurrency_key LIMIT 1) END) AS key,
             k.wrapped OR a.key IS NULL AS wrapped OFFSET 0) nx
    WHERE nx.key IS NOT NULL AND NOT (nx.wrapped AND nx.key > p_after)
  )
  SELECT coalesce(array_agg(s.key ORDER BY s.n), '{}') INTO ks
  FROM (
    SELECT k.key, k.n
    FROM k CROSS JOIN LATERAL (
      SELECT j.concurrency_limit AS lim FROM {{schema}}.scheduler_job_queue j
      WHERE j.status = 'PENDING' AND j.concurrency_key = k.key AND j.picked_by IS NULL
        AND j.scheduled_time <= t_now AND j.type = ANY(p_types) AND (p_queue IS NULL OR j.queue = p_queue)
      ORDER BY j.priority DESC, j.scheduled_time, j.id
      LIMIT 1
    ) f
    WHERE k.n > 0
      AND (f.lim IS NULL OR (SELECT coalesce(sum(d.delta), 0) FROM {{schema}}.scheduler_concurrency_running d
                             WHERE d.concurrency_key = k.key) < f.lim)
    LIMIT w
  ) s;
  IF cardinality(ks) = 0 THEN
    -- No key can start a job now. Whether any keyed row is PENDING at all tells the node whether to keep
    -- sending this claim; the window stays where it was.
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue,
      CASE WHEN EXISTS (SELECT 1 FROM {{schema}}.scheduler_job_queue j
                        WHERE j.status = 'PENDING' AND j.concurrency_key IS NOT NULL)
           THEN coalesce(p_after, '') END;
    RETURN;
  END IF;
  v_next := ks[cardinality(ks)];
  IF p_limit <= 0 THEN
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue, v_next;
    RETURN;
  END IF;

  SELECT coalesce(array_agg(u.key ORDER BY u.ord), '{}') INTO locked
  FROM unnest(ks) WITH ORDINALITY AS u(key, ord)
  WHERE pg_try_advisory_xact_lock(hashtext('pawl keys {{schema}}'), hashtext(u.key));
  IF cardinality(locked) = 0 THEN
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue, v_next;
    RETURN;
  END IF;
  -- Enough rows per key for the rounds a claim of p_limit can reach, plus one (the window holds only keys
  -- that can start a job, so few are refused), and never more than 16 of one key, as in 0011.
  per_key := least(p_limit, 16, ceil(1.0 * p_limit / cardinality(locked))::int + 1);

  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
    WITH cand AS (
      SELECT r.id, u.key, r.concurrency_limit AS lim, r.scheduled_time,
             r.priority + CASE WHEN p_boost_ms > 0
               THEN floor(greatest(0, extract(epoch FROM t_now - r.scheduled_time) * 1000) / p_boost_ms)::int
               ELSE 0 END AS effective,
             row_number() OVER (PARTITION BY u.key ORDER BY r.priority DESC, r.scheduled_time, r.id) AS round
      FROM unnest(locked) AS u(key) CROSS JOIN LATERAL (
        SELECT j.id, j.concurrency_limit, j.priority, j.scheduled_time
        FROM {{schema}}.scheduler_job_queue j
        WHERE j.status = 'PENDING' AND j.concurrency_key = u.key AND j.picked_by IS NULL
          AND j.scheduled_time <= t_now AND j.type = ANY(p_types)
          AND (p_queue IS NULL OR j.queue = p_queue)
        ORDER BY j.priority DESC, j.scheduled_time, j.id
        LIMIT per_key
      ) r
    ),
    counts AS (
      SELECT c.key, (SELECT coalesce(sum(d.delta), 0) FROM {{schema}}.scheduler_concurrency_running d
                     WHERE d.concurrency_key = c.key) AS running
      FROM cand c GROUP BY c.key HAVING bool_or(c.lim IS NOT NULL)
    ),
    fits AS (
      -- Each row against its own limit: the key's running count plus the limited rows of the key this
      -- claim takes before it (rows without a limit take no slot).
      SELECT c.key, c.id, c.round, c.effective, c.scheduled_time,
             c.lim IS NULL OR coalesce(n.running, 0) + count(c.lim) OVER (
               PARTITION BY c.key ORDER BY c.round
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) < c.lim AS fit
      FROM cand c LEFT JOIN counts n ON n.key = c.key
    ),
    allowed AS (
      -- The first row that does not fit stops its key: the key's later rows wait too.
      SELECT f.id, f.round, f.effective, f.scheduled_time,
             bool_and(f.fit) OVER (PARTITION BY f.key ORDER BY f.round) AS ok
      FROM fits f
    ),
    pick AS (
      SELECT a.id FROM allowed a WHERE a.ok ORDER BY a.round, a.effective DESC, a.scheduled_time, a.id
      LIMIT p_limit
    ),
    lockrows AS (
      SELECT x.id FROM {{schema}}.scheduler_job_queue x
      WHERE x.id IN (SELECT p.id FROM pick p) AND x.status = 'PENDING' AND x.picked_by IS NULL
      FOR UPDATE SKIP LOCKED
    ),
    leased AS (
      UPDATE {{schema}}.scheduler_job_queue j
      SET picked_by = p_node, picked_at = now(), attempts = j.attempts + 1, updated_at = now()
      FROM lockrows l WHERE j.id = l.id
      RETURNING j
    )
    SELECT l.j, v_next FROM leased l;
  IF NOT FOUND THEN
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue, v_next;
  END IF;

  -- Fold (step 4). The deltas of this claim's own leases are visible here and folded with the rest.
  WITH fold AS (
    SELECT d.concurrency_key FROM {{schema}}.scheduler_concurrency_running d
    WHERE d.concurrency_key = ANY(ARRAY(SELECT x FROM unnest(locked) x WHERE random() < 0.125))
    GROUP BY d.concurrency_key HAVING count(*) > 4
  ),
  gone AS (
    DELETE FROM {{schema}}.scheduler_concurrency_running d USING fold f
    WHERE d.concurrency_key = f.concurrency_key
    RETURNING d.concurrency_key, d.delta
  )
  INSERT INTO {{schema}}.scheduler_concurrency_running
  SELECT g.concurrency_key, sum(g.delta) FROM gone g GROUP BY g.concurrency_key HAVING sum(g.delta) <> 0;
END
$$;

-- 0011's function, for a node that still calls it: the same claim, without a cursor.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_claim_keyed(p_limit integer, p_node text, p_types text[],
                                                       p_boost_ms bigint, p_queue text, p_now timestamptz)
RETURNS SETOF {{schema}}.scheduler_job_queue
LANGUAGE sql VOLATILE AS $$
  SELECT (c.claimed_job).*
  FROM {{schema}}.pawl_claim_keys(p_limit, p_node, p_types, p_boost_ms, p_queue, p_now, NULL) c
  WHERE (c.claimed_job).id IS NOT NULL
$$;

-- Lease counting (0011), for rows with a limit only: a row counts for its key while it is leased and has
-- both a key and a limit. A key or limit changed by hand moves the row's count with it.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_count_lease() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  old_key text;
  new_key text;
  was integer := 0;
  is_now integer := 0;
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.concurrency_limit IS NOT NULL THEN
    old_key := OLD.concurrency_key;
    IF old_key IS NOT NULL AND OLD.status = 'PENDING' AND OLD.picked_by IS NOT NULL THEN
      was := 1;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.concurrency_limit IS NOT NULL THEN
    new_key := NEW.concurrency_key;
    IF new_key IS NOT NULL AND NEW.status = 'PENDING' AND NEW.picked_by IS NOT NULL THEN
      is_now := 1;
    END IF;
  END IF;
  IF old_key IS DISTINCT FROM new_key THEN
    IF was = 1 THEN
      INSERT INTO {{schema}}.scheduler_concurrency_running VALUES (old_key, -1);
    END IF;
    IF is_now = 1 THEN
      INSERT INTO {{schema}}.scheduler_concurrency_running VALUES (new_key, 1);
    END IF;
  ELSIF is_now <> was THEN
    INSERT INTO {{schema}}.scheduler_concurrency_running VALUES (new_key, is_now - was);
  END IF;
  RETURN NULL;
END
$$;

-- The WHEN clauses keep rows without a limit off the trigger entirely (no function call per row).
DROP TRIGGER pawl_count_lease_update ON {{schema}}.scheduler_job_queue;
DROP TRIGGER pawl_count_lease_delete ON {{schema}}.scheduler_job_queue;
DROP TRIGGER pawl_count_lease_insert ON {{schema}}.scheduler_job_queue;
CREATE TRIGGER pawl_count_lease_update AFTER UPDATE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN ((OLD.concurrency_limit IS NOT NULL OR NEW.concurrency_limit IS NOT NULL)
    AND (OLD.picked_by IS DISTINCT FROM NEW.picked_by OR OLD.status IS DISTINCT FROM NEW.status
         OR OLD.concurrency_key IS DISTINCT FROM NEW.concurrency_key
         OR OLD.concurrency_limit IS DISTINCT FROM NEW.concurrency_limit))
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();
CREATE TRIGGER pawl_count_lease_delete AFTER DELETE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (OLD.concurrency_limit IS NOT NULL AND OLD.concurrency_key IS NOT NULL
                     AND OLD.picked_by IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();
CREATE TRIGGER pawl_count_lease_insert AFTER INSERT ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (NEW.concurrency_limit IS NOT NULL AND NEW.concurrency_key IS NOT NULL
                     AND NEW.picked_by IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.pawl_count_lease();

-- The counts under the new rule, from the rows. DROP TRIGGER holds the table's ACCESS EXCLUSIVE lock until
-- this migration commits, so no lease changes between this count and the new triggers.
DELETE FROM {{schema}}.scheduler_concurrency_running;
INSERT INTO {{schema}}.scheduler_concurrency_running
SELECT concurrency_key, count(*)::int FROM {{schema}}.scheduler_job_queue
WHERE status = 'PENDING' AND picked_by IS NOT NULL AND concurrency_key IS NOT NULL
  AND concurrency_limit IS NOT NULL
GROUP BY concurrency_key;

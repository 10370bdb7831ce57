-- previous release: compatible (adds a table and two triggers, and replaces pawl_claim_keys' body with the same signature and rows; a 0.2.0 node's claim calls it unchanged)
--
-- pawl 0017: the keyed claim reads a table of live keys (issue 44, docs/fairness.md#the-graveyard).
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- 0013's window found keys by a skip scan of the keyed index: every step "the next key after k" descends
-- to the start of the next key's entries and walks forward to its first live one. Finished keyed jobs
-- leave dead entries there (a finished row is deleted from the live table), and while the xmin horizon is
-- held, or while other writes keep a page changing so that scans cannot mark the entries dead, every
-- step reads the heap for each of them. When no key could start a job the walk went through every key,
-- so each claim read every dead keyed entry since the last vacuum: the graveyard that claim cursors skip
-- for unkeyed claims (docs/claim-cursors.md). Measured on a reproduction (docs/fairness.md): 5 ms and
-- 8,562 buffers per claim after 9,000 keyed jobs under a held horizon, growing with every job.
--
-- scheduler_keyed_live holds the keys that have PENDING rows (claimable, leased, or not yet due): a row
-- trigger adds a key whenever one of its rows becomes PENDING (an insert, a flow member released, a
-- resumed or retried-from-the-dead-letter-queue row), whichever node or release writes it, and the keyed
-- claim drops keys it finds without any PENDING row. The claim walks this table's primary key, at most
-- eight windows of keys per claim, 64 to 512 (the next claim goes on after them), and probes only those
-- keys, so a claim's cost no longer grows with the keys that finished, nor with the number of keys.
--
-- A node of the previous release (0.2.0) is correct beside this schema: its claim calls pawl_claim_keys,
-- whose signature and rows are unchanged, and its writes fire the trigger like anyone's, so the table is
-- kept whoever writes.
CREATE TABLE {{schema}}.scheduler_keyed_live (
  concurrency_key text PRIMARY KEY
);

-- Adds the key of a row that became PENDING. The key's slot lock (one of 64 per schema, shared, held to
-- commit) is what makes dropping a key safe: the claim drops only keys whose slot it holds exclusively,
-- so no transaction that is adding a row of the key can be in flight. Shared locks never wait for each
-- other, and the claim never waits for this one (it only tries), so no deadlock can form here. At most 64
-- lock entries per transaction, however many keys it writes.
-- It runs as its owner (SECURITY DEFINER, with a pinned search_path; every name in it is qualified): a
-- trigger function runs as the role whose write fired it, and a role granted before this migration (a
-- 0.2.0 node's, an enqueue-only role) has no privilege on the new table, so its keyed writes would fail.
CREATE FUNCTION {{schema}}.pawl_keyed_live_add() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('pawl live keys {{schema}}'), hashtext(NEW.concurrency_key) & 63);
  INSERT INTO {{schema}}.scheduler_keyed_live VALUES (NEW.concurrency_key) ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

-- The WHEN clauses keep unkeyed rows, and keyed rows that stay PENDING (a claim, a retry), off the
-- trigger entirely.
CREATE TRIGGER pawl_keyed_live_insert AFTER INSERT ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND NEW.status = 'PENDING')
  EXECUTE FUNCTION {{schema}}.pawl_keyed_live_add();
CREATE TRIGGER pawl_keyed_live_update AFTER UPDATE ON {{schema}}.scheduler_job_queue
  FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL AND NEW.status = 'PENDING'
                     AND (OLD.status <> 'PENDING' OR OLD.concurrency_key IS DISTINCT FROM NEW.concurrency_key))
  EXECUTE FUNCTION {{schema}}.pawl_keyed_live_add();

-- The keys live now. CREATE TRIGGER waited for every transaction writing the table and holds its lock
-- until this migration commits, so no row becomes PENDING between this read and the triggers.
INSERT INTO {{schema}}.scheduler_keyed_live
SELECT DISTINCT concurrency_key FROM {{schema}}.scheduler_job_queue
WHERE status = 'PENDING' AND concurrency_key IS NOT NULL;

-- The keyed claim (0013's, with the same signature, rows and order): the window is now read from the
-- live-key table, at most m keys per claim, and keys without PENDING rows are dropped. Steps 2-4 (the
-- key locks, the rounds, the fold) are 0013's, unchanged.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_claim_keys(p_limit integer, p_node text, p_types text[], p_boost_ms bigint,
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
  -- Keys one claim reads at most (0017): eight windows' worth, 64 to 512. When few keys can start a job,
  -- a claim reads m keys and the next one goes on after them, so no claim reads every key of 20,000.
  m integer := least(512, greatest(64, 8 * least(greatest(ceil(p_limit / 4.0)::int, 1), 64)));
  ring text[];
  gone text[];
  ks text[];
  locked text[];
  per_key integer;
  v_next text;
BEGIN
  -- The ring: up to m keys of the live-key table in ring order (after p_after in key order, then wrapped
  -- around up to and including p_after). A read of that table's primary key only: a key whose rows are
  -- all gone is not in it (or not for long), so the walk never steps over the keyed index's dead entries
  -- of keys that have nothing left, which is what made 0013's walk cost grow with the graveyard.
  SELECT coalesce(array_agg(r.key ORDER BY r.part, r.key), '{}') INTO ring
  FROM (
    SELECT u.key, u.part FROM (
      (SELECT l.concurrency_key AS key, 1 AS part FROM {{schema}}.scheduler_keyed_live l
       WHERE l.concurrency_key > coalesce(p_after, '') ORDER BY l.concurrency_key LIMIT m)
      UNION ALL
      (SELECT l.concurrency_key, 2 FROM {{schema}}.scheduler_keyed_live l
       WHERE p_after IS NOT NULL AND l.concurrency_key <= p_after ORDER BY l.concurrency_key LIMIT m)
    ) u ORDER BY u.part, u.key LIMIT m
  ) r;
  IF cardinality(ring) = 0 THEN
    -- No key has PENDING rows: the node stops sending this claim until a wakeup or its recheck.
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue, NULL::text;
    RETURN;
  END IF;
  -- The window: the first w keys of the ring that can start a job now: the key's first claimable row in
  -- the key's order exists and has no limit, or fewer than its limit of the key's jobs run. Read without
  -- the key's lock: it only chooses the window; the claim decides again under the lock. The probes run
  -- lazily, in ring order, and stop once the window is full.
  SELECT coalesce(array_agg(s.key ORDER BY s.n), '{}') INTO ks
  FROM (
    SELECT u.key, u.n
    FROM unnest(ring) WITH ORDINALITY AS u(key, n) CROSS JOIN LATERAL (
      SELECT j.concurrency_limit AS lim FROM {{schema}}.scheduler_job_queue j
      WHERE j.status = 'PENDING' AND j.concurrency_key = u.key AND j.picked_by IS NULL
        AND j.scheduled_time <= t_now AND j.type = ANY(p_types) AND (p_queue IS NULL OR j.queue = p_queue)
      ORDER BY j.priority DESC, j.scheduled_time, j.id
      LIMIT 1
    ) f
    WHERE f.lim IS NULL OR (SELECT coalesce(sum(d.delta), 0) FROM {{schema}}.scheduler_concurrency_running d
                            WHERE d.concurrency_key = u.key) < f.lim
    LIMIT w
  ) s;
  -- Where the next claim starts: after the window's last key when the window is full; after the last key
  -- this walk read when it stopped at m keys; else (the ring went all the way round) after the window's
  -- last key, or where this claim started.
  IF cardinality(ks) = w THEN
    v_next := ks[w];
  ELSIF cardinality(ring) = m THEN
    v_next := ring[m];
  ELSE
    v_next := coalesce(ks[cardinality(ks)], p_after, '');
  END IF;
  IF cardinality(ks) < w AND random() < 0.1 THEN
    -- Some keys of the ring could not start a job: drop those that have no PENDING row at all. Race-free
    -- against a transaction that makes a row of the key PENDING (the trigger below takes its key's slot
    -- lock, shared, before it adds the key): only keys whose slot this claim locks exclusively (never
    -- waiting) are dropped, and the check runs in the next statement, whose snapshot is taken after the
    -- locks were granted, so it sees every such row that committed before. A key added later finds no
    -- row and adds it again. At most 16 keys, in one claim in ten: every drop of a key that fills again
    -- leaves a dead entry in the table's primary key, which the ring's read steps over until vacuum, so
    -- a key that empties and fills often must not be dropped and added on every claim. A key left in
    -- the table meanwhile costs one probe in the claims whose ring reads it.
    SELECT coalesce(array_agg(x.key), '{}') INTO gone
    FROM (
      SELECT u.key FROM unnest(ring) AS u(key)
      -- A probe of the keyed index per key (a scalar subquery with LIMIT 1: written as NOT EXISTS, the
      -- planner turned it into an anti join that read the whole keyed index).
      WHERE u.key <> ALL(ks)
        AND (SELECT 1 FROM {{schema}}.scheduler_job_queue j
             WHERE j.status = 'PENDING' AND j.concurrency_key = u.key LIMIT 1) IS NULL
      LIMIT 16
    ) x
    WHERE pg_try_advisory_xact_lock(hashtext('pawl live keys {{schema}}'), hashtext(x.key) & 63);
    IF cardinality(gone) > 0 THEN
      DELETE FROM {{schema}}.scheduler_keyed_live l
      WHERE l.concurrency_key = ANY(gone)
        AND (SELECT 1 FROM {{schema}}.scheduler_job_queue j
             WHERE j.status = 'PENDING' AND j.concurrency_key = l.concurrency_key LIMIT 1) IS NULL;
    END IF;
  END IF;
  IF cardinality(ks) = 0 THEN
    -- No key of the ring can start a job now. Whether any key has PENDING rows at all (the live-key
    -- table, after the drop above) tells the node whether to keep sending this claim.
    RETURN QUERY SELECT NULL::{{schema}}.scheduler_job_queue,
      CASE WHEN EXISTS (SELECT 1 FROM {{schema}}.scheduler_keyed_live) THEN v_next END;
    RETURN;
  END IF;
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


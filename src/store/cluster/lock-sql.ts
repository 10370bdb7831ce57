/**
 * scheduler_lock: store-backed leases for the cluster's singleton maintenance (orphan sweep, pruning,
 * recurring scheduling). A lease is a row naming its owner and when it expires, by the database's clock
 * only; a crashed owner's lease simply expires. Acquiring is one upsert that succeeds when the row is
 * free, expired, or already ours, and a refused try writes nothing.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** A lease as granted by the database. */
export interface LockGrant {
  /** When the current holder first took it (kept across renewals and re-acquisitions). */
  lockedAt: Date;
  /** When it expires unless renewed. */
  expiresAt: Date;
}

/** A row of scheduler_lock, for inspection. */
export interface LockRow extends LockGrant {
  name: string;
  owner: string;
  /** Whether it is still valid by the database's clock. */
  held: boolean;
}

/** How {@link grantLock} grants a lease. */
export type LockGrantKind = "acquire" | "renew";

/** The statement of each kind of grant; parameters: name, owner, TTL ms, now. */
const grantSql: Record<LockGrantKind, (t: Tables) => string> = {
  // Succeeds when the lease is free, expired or already the owner's (then it is extended, keeping
  // locked_at). The NOT EXISTS reads the row first and skips the upsert when another owner holds it: ON
  // CONFLICT DO UPDATE locks the conflicting row even when its WHERE refuses the update, and a row lock
  // takes a transaction id, writes WAL and makes the commit wait for a WAL flush. Most tries in a cluster
  // are refused (the lease is held or resting), so without the read every idle node would write twice a
  // second. The read only decides whether to try: the DO UPDATE's WHERE, evaluated on the row as locked,
  // still decides who gets the lease when two nodes race.
  acquire: (t) => `INSERT INTO ${t.locks} AS l (lock_name, owner_node, locked_at, expires_at)
       SELECT $1::text, $2::text, coalesce($4::timestamptz, now()),
              coalesce($4::timestamptz, now()) + $3::bigint * interval '1 millisecond'
       WHERE NOT EXISTS (
         SELECT 1 FROM ${t.locks} h
         WHERE h.lock_name = $1 AND h.expires_at >= coalesce($4::timestamptz, now()) AND h.owner_node <> $2)
       ON CONFLICT (lock_name) DO UPDATE SET
         owner_node = EXCLUDED.owner_node,
         locked_at = CASE WHEN l.owner_node = EXCLUDED.owner_node AND l.expires_at >= EXCLUDED.locked_at
                          THEN l.locked_at ELSE EXCLUDED.locked_at END,
         expires_at = EXCLUDED.expires_at
       WHERE l.expires_at < EXCLUDED.locked_at OR l.owner_node = EXCLUDED.owner_node
       RETURNING l.locked_at, l.expires_at`,
  // Fails once the lease has expired, even if nobody took it since: the holder may already have been
  // overtaken, so it must stop and acquire again.
  renew: (t) => `UPDATE ${t.locks}
       SET expires_at = coalesce($4::timestamptz, now()) + $3::bigint * interval '1 millisecond'
       WHERE lock_name = $1 AND owner_node = $2 AND expires_at >= coalesce($4::timestamptz, now())
       RETURNING locked_at, expires_at`,
};

/**
 * Grants `owner` the lease `name` for `ttlMs` from now. `acquire` takes it if it is free, expired or
 * already `owner`'s (then it is extended); `renew` extends `owner`'s lease only while it has not expired.
 * Returns the grant, or null when refused.
 */
export async function grantLock(
  db: Queryable,
  t: Tables,
  kind: LockGrantKind,
  name: string,
  owner: string,
  ttlMs: number,
  now: Date | null = null,
): Promise<LockGrant | null> {
  const res = await db.query<{ locked_at: Date; expires_at: Date }>(
    named(t, `lock_${kind}`, grantSql[kind](t))([name, owner, ttlMs, now]),
  );
  const row = res.rows[0];
  return row ? { lockedAt: row.locked_at, expiresAt: row.expires_at } : null;
}

/** The owner a rested lease is held by until it ends: `rest:` and the node that rested it. */
export const restingOwner = (owner: string): string => `rest:${owner}`;

/**
 * Gives the lease back if `owner` holds it; returns whether it did. With `restMs` the row stays, held by
 * {@link restingOwner} until `restMs` from now (never later than the lease would have ended): nobody
 * takes it before then, not even `owner`, so a pass that runs on a cadence and rests its lease for part
 * of its interval runs on about one node per interval however many try (see docs/cluster.md), and any
 * node may run the next one.
 */
export async function releaseLock(
  db: Queryable,
  t: Tables,
  name: string,
  owner: string,
  restMs = 0,
  now: Date | null = null,
): Promise<boolean> {
  const res = await db.query(
    restMs > 0
      ? named(
          t,
          "lock_rest",
          `UPDATE ${t.locks}
           SET owner_node = $5,
               expires_at = least(expires_at, coalesce($4::timestamptz, now()) + $3::bigint * interval '1 millisecond')
           WHERE lock_name = $1 AND owner_node = $2`,
        )([name, owner, restMs, now, restingOwner(owner)])
      : named(
          t,
          "lock_release",
          `DELETE FROM ${t.locks} WHERE lock_name = $1 AND owner_node = $2`,
        )([name, owner]),
  );
  return (res.rowCount ?? 0) > 0;
}

/** Every lease row, valid or not, by name. */
export async function listLocks(db: Queryable, t: Tables, now: Date | null = null): Promise<LockRow[]> {
  const res = await db.query<{
    lock_name: string;
    owner_node: string;
    locked_at: Date;
    expires_at: Date;
    held: boolean;
  }>(
    named(
      t,
      "lock_list",
      `SELECT lock_name, owner_node, locked_at, expires_at, expires_at >= coalesce($1::timestamptz, now()) AS held
       FROM ${t.locks} ORDER BY lock_name`,
    )([now]),
  );
  return res.rows.map((r) => ({
    name: r.lock_name,
    owner: r.owner_node,
    lockedAt: r.locked_at,
    expiresAt: r.expires_at,
    held: r.held,
  }));
}

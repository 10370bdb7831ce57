/**
 * Shared helpers of the benchmark: the database URL (and creating the bench database), statistics,
 * monotonic timestamps that are comparable across processes, and small async utilities.
 */
import { loadavg } from "node:os";
import pg from "pg";

/** The default bench database: a dedicated one, so per-database CPU accounting sees only the bench. */
export const defaultDatabaseUrl = "postgres://postgres@127.0.0.1:5432/pawl_bench";

/** The database URL: `--database-url`, else `BENCH_DATABASE_URL`, else {@link defaultDatabaseUrl}. */
export function benchDatabaseUrl(flag?: string): string {
  return flag ?? process.env.BENCH_DATABASE_URL ?? defaultDatabaseUrl;
}

/** The database name of a URL (`postgres` when the URL names none). */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ""));
  return name === "" ? "postgres" : name;
}

/** Runs one statement on a connection of its own (opened and closed around it) and returns its rows. */
export async function queryOnce<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const walBytesSql = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text AS b";

/**
 * The server's WAL position in bytes (`pg_current_wal_lsn()`): the WAL written between two readings is their
 * difference. It is the whole cluster's, so another database's writes count too. `db` is a URL (read on a
 * connection of its own) or an open client or pool.
 */
export async function walBytes(db: string | pg.Pool | pg.ClientBase): Promise<bigint> {
  const rows =
    typeof db === "string"
      ? await queryOnce<{ b: string }>(db, walBytesSql)
      : (await db.query<{ b: string }>(walBytesSql)).rows;
  return BigInt(rows[0]!.b);
}

/** Creates the URL's database when it does not exist (connecting to the `postgres` database to do it). */
export async function ensureDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } catch (error) {
        // Another bench process may have created it at the same moment.
        if ((error as { code?: string }).code !== "42P04") throw error;
      }
    }
  } finally {
    await client.end();
  }
}

/** A monotonic timestamp in nanoseconds. CLOCK_MONOTONIC is system-wide on Linux, so two processes' values compare directly. */
export const nowNs = (): bigint => process.hrtime.bigint();

/** Milliseconds between two {@link nowNs} values. */
export const msBetween = (from: bigint, to: bigint): number => Number(to - from) / 1e6;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The median of a list (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The q-quantile (0..1) by the nearest-rank method. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil(q * s.length)));
  return s[rank - 1]!;
}

/** Latency summary of a list of samples (ms). */
export function summarize(samples: readonly number[]): {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
} {
  return {
    p50: quantile(samples, 0.5),
    p90: quantile(samples, 0.9),
    p99: quantile(samples, 0.99),
    // A loop, not Math.max(...samples): spreading tens of thousands of samples overflows the stack.
    max: samples.reduce((a, b) => (b > a ? b : a), samples.length ? -Infinity : NaN),
    mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : NaN,
  };
}

/** A promise with its resolve function outside. */
export function deferred<T>(): {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
} {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Rejects with a clear message when `promise` takes longer than `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every `everyMs` until it returns true; rejects after `timeoutMs`. */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  what: string,
  { everyMs = 5, timeoutMs = 600_000 } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Rounds to `digits` decimals (keeps JSON output readable). */
export const round = (x: number, digits = 0): number => {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/** The machine's load averages (1, 5, 15 min), to two decimals: printed beside each measurement. */
export const loadAverage = (): number[] => loadavg().map((x) => round(x, 2));

/** Quotes an SQL identifier. */
export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

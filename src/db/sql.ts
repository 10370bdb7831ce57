/**
 * The shared SQL plumbing: what can run a query, and the qualified table names of one schema. Every
 * statement is built once per schema and named, so pg prepares it once per connection, unless the schema's
 * {@link Tables} say `prepared: false` (createPawl's `preparedStatements: false`, for transaction poolers
 * that cannot carry a named statement from one transaction to the next): then {@link named} leaves the
 * name out and every statement runs unnamed. `named` is the only place a statement name is made.
 */
import { createHash } from "node:crypto";
import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { quoteSchema } from "./schema-name.js";

/** Anything that runs a query: a pg Pool, PoolClient or Client (the caller's transaction). */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(
    config: QueryConfig | string,
    values?: unknown[],
  ): Promise<QueryResult<R>>;
}

/**
 * What a caller's transaction may be, as the `client` of a transactional enqueue: anything that runs a
 * statement with `$1`-style parameters and resolves to its `rows`. A pg `Client`, `PoolClient` or `Pool`
 * fits as it is; so does a two-line adapter over a query builder's transaction (kysely, knex, drizzle,
 * docs/sql-enqueue.md). Structural on purpose: pawl must not depend on the builder.
 *
 * @example
 * ```ts
 * import { CompiledQuery } from "kysely";
 * await db.transaction().execute(async (trx) => {
 *   const client: SqlClient = { query: (text, values) => trx.executeQuery(CompiledQuery.raw(text, values)) };
 *   await pawl.enqueue("order.confirm", { orderId }, { client });
 * });
 * ```
 */
export interface SqlClient {
  /** Runs `text` with `values` bound to `$1`, `$2`... in the caller's transaction. */
  query(text: string, values?: unknown[]): PromiseLike<{ rows: readonly unknown[] }>;
}

/**
 * Whether `client` is node-postgres (a Client, PoolClient or Pool), which takes named statements. Judged
 * from the shape, not `instanceof`, so a second copy of pg in node_modules is recognised too.
 */
function isNodePostgres(client: SqlClient): boolean {
  const c = client as unknown as Record<string, unknown>;
  const isClient = typeof c.escapeIdentifier === "function" && typeof c.connection === "object";
  const isPool = typeof c.connect === "function" && typeof c.totalCount === "number";
  return isClient || isPool;
}

/**
 * The {@link Queryable} that runs pawl's statements on a caller's client, decided once from its shape:
 * node-postgres as it is, so pawl's named statements are prepared once per connection; anything else
 * through their text and values only (unnamed), since a builder's adapter neither knows nor needs pg's
 * statement names. Only `rows` is read from such a client's results.
 */
export function asQueryable(client: SqlClient): Queryable {
  if (isNodePostgres(client)) return client as unknown as Queryable;
  return {
    async query<R extends QueryResultRow = QueryResultRow>(
      config: QueryConfig | string,
      values?: unknown[],
    ): Promise<QueryResult<R>> {
      const text = typeof config === "string" ? config : config.text;
      const res = await client.query(text, typeof config === "string" ? values : config.values);
      const rows = [...res.rows] as R[];
      return { rows, rowCount: rows.length, command: "", oid: 0, fields: [] };
    },
  };
}

/** The qualified names of one schema's tables. */
export interface Tables {
  /** The bare schema name. */
  schema: string;
  /** The quoted schema. */
  s: string;
  /** The live jobs (PENDING, RUNNING, WAITING, PAUSED): what claims, outcomes and enqueues touch. */
  jobs: string;
  /**
   * Jobs that ended (SUCCEEDED, CANCELED, DEAD), moved out of `jobs` under the same id (migration 0005): the
   * parent of the finished partitions (migration 0016), which every read and write of finished rows names.
   */
  finished: string;
  /** The finished partition pruned row by row: DEAD, CANCELED, and SUCCEEDED rows no time range covered. */
  finishedRows: string;
  /** The safety net under the time partitions (a row no range covers); pruned row by row. */
  finishedDefault: string;
  /** The time partitions that exist, one row each (range_start, range_end). */
  finishedPartitions: string;
  /** Every job, live or finished (a UNION ALL view of the two): what reads by id or by filter use. */
  all: string;
  nodes: string;
  locks: string;
  permits: string;
  /**
   * Whether {@link named} statements carry their names (prepared once per connection). False behind a
   * transaction pooler: see createPawl's `preparedStatements`.
   */
  prepared: boolean;
}

/**
 * Builds {@link Tables} for a schema (validating the name).
 *
 * @param prepared Whether statements are named, so pg prepares them (default true).
 */
export function tablesFor(schema: string, prepared = true): Tables {
  const s = quoteSchema(schema);
  return {
    schema,
    s,
    prepared,
    jobs: `${s}.scheduler_job_queue`,
    finished: `${s}.scheduler_job_finished`,
    finishedRows: `${s}.scheduler_job_finished_rows`,
    finishedDefault: `${s}.scheduler_job_finished_succeeded_default`,
    finishedPartitions: `${s}.scheduler_job_finished_partition`,
    all: `${s}.scheduler_job_all`,
    nodes: `${s}.scheduler_node`,
    locks: `${s}.scheduler_lock`,
    permits: `${s}.scheduler_resource_permit`,
  };
}

/** PostgreSQL's identifier limit (NAMEDATALEN - 1), which prepared-statement names share. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * The prepared-statement name of statement `name` in `schema`: `pawl_<schema>_<name>` when that fits in
 * PostgreSQL's 63 bytes, else `pawl_<hash>_<name>` cut to 63, where the hash is of schema and name both.
 * Past 63 bytes the server would truncate the name silently, so two statements of a long schema would
 * share one name (pg then runs one's text under the other's plan, or refuses), and pg itself prints a
 * warning to the host's stderr on every such query. The hash (48 bits) keeps each pair's name its own
 * whatever the cut leaves of `name`; the plain form stays for the names that fit, so they read as before
 * in pg_prepared_statements.
 *
 * @example
 * ```ts
 * statementName("pawl", "claim_full"); // "pawl_pawl_claim_full"
 * statementName("a".repeat(63), "claim_full"); // "pawl_3f1c0e9b2a7d_claim_full" (some 12-hex hash)
 * ```
 */
export function statementName(schema: string, name: string): string {
  const plain = `pawl_${schema}_${name}`;
  // Schema names are ASCII (validateSchemaName) and statement names are pawl's own ASCII words, so a
  // character is a byte here.
  if (plain.length <= MAX_IDENTIFIER_BYTES) return plain;
  const hash = createHash("sha256").update(`${schema}\u0000${name}`).digest("hex").slice(0, 12);
  return `pawl_${hash}_${name}`.slice(0, MAX_IDENTIFIER_BYTES);
}

/**
 * A named statement: pg prepares it once per connection. Names must be unique per text, so the schema
 * goes into the name, bounded by {@link statementName}. With `t.prepared` false the statement goes out unnamed (parsed and planned on each
 * run), which is what a transaction pooler needs: a name prepared on one server connection is unknown on
 * the next one the pooler hands out ("prepared statement ... does not exist"), or already taken there.
 */
export function named(t: Tables, name: string, text: string): (values: unknown[]) => QueryConfig {
  if (!t.prepared) return (values) => ({ text, values });
  const full = statementName(t.schema, name);
  return (values) => ({ name: full, text, values });
}

/**
 * A claim-style statement in its two shapes (with and without payload), built once per schema and
 * cached, so each is prepared once per connection under its own name.
 */
export function payloadVariants(
  name: string,
  build: (t: Tables, withPayload: boolean) => string,
): (t: Tables, withPayload: boolean) => (values: unknown[]) => QueryConfig {
  const cache = new WeakMap<
    Tables,
    { full: (values: unknown[]) => QueryConfig; light: (values: unknown[]) => QueryConfig }
  >();
  return (t, withPayload) => {
    let s = cache.get(t);
    if (!s) {
      s = {
        full: named(t, `${name}_full`, build(t, true)),
        light: named(t, `${name}_light`, build(t, false)),
      };
      cache.set(t, s);
    }
    return withPayload ? s.full : s.light;
  };
}

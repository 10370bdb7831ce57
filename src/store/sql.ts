/**
 * The shared SQL plumbing: what can run a query, and the qualified table names of one schema. Every
 * statement is built once per schema and named, so pg prepares it once per connection.
 */
import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { quoteSchema } from "./schema-name.js";

/** Anything that runs a query: a pg Pool, PoolClient or Client (the caller's transaction). */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(
    config: QueryConfig | string,
    values?: unknown[],
  ): Promise<QueryResult<R>>;
}

/** The qualified names of one schema's tables. */
export interface Tables {
  /** The bare schema name. */
  schema: string;
  /** The quoted schema. */
  s: string;
  /** The live jobs (PENDING, RUNNING, WAITING, PAUSED): what claims, outcomes and enqueues touch. */
  jobs: string;
  /** Jobs that ended (SUCCEEDED, CANCELED, DEAD), moved out of `jobs` under the same id (migration 0005). */
  finished: string;
  /** Every job, live or finished (a UNION ALL view of the two): what reads by id or by filter use. */
  all: string;
  nodes: string;
  locks: string;
  permits: string;
}

/** Builds {@link Tables} for a schema (validating the name). */
export function tablesFor(schema: string): Tables {
  const s = quoteSchema(schema);
  return {
    schema,
    s,
    jobs: `${s}.scheduler_job_queue`,
    finished: `${s}.scheduler_job_finished`,
    all: `${s}.scheduler_job_all`,
    nodes: `${s}.scheduler_node`,
    locks: `${s}.scheduler_lock`,
    permits: `${s}.scheduler_resource_permit`,
  };
}

/**
 * A named statement: pg prepares it once per connection. Names must be unique per text, so the schema
 * goes into the name.
 */
export function named(t: Tables, name: string, text: string): (values: unknown[]) => QueryConfig {
  const full = `pawl_${t.schema}_${name}`;
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

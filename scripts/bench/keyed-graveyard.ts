/**
 * `npm run bench -- --keyed-graveyard` (issue 44, docs/fairness.md#the-graveyard): the keyed claim
 * statement's time as finished keyed jobs stream through while the xmin horizon is held (a transaction
 * keeps its snapshot open, so no dead index entry can be removed or marked), with 200, 1,000 and 20,000
 * keys, on the previous keyed claim (migration 0013, from the build given by `--dist`, or the schema
 * version 16) and on this tree's (0017).
 *
 * Each round: 15 keys hold 2 running jobs each (leased, limit 2: no key can start a job, the worst
 * moment), then `step` keyed jobs over every key are inserted and deleted (finished) under the held
 * horizon, then the claim (limit 50, from the first key) runs 15 times, each in a transaction rolled back,
 * and the median time and buffers are recorded. Between rounds the new schema's claim runs committed as a
 * node's would (it drops the emptied keys from its live-key table).
 */
import { pathToFileURL } from "node:url";
import pg from "pg";
import type { createPawl as CreatePawl } from "../../dist/src/index.js";
import { median } from "./lib/common.js";

/** One measured point. */
export interface KeyedGraveyardPoint {
  variant: "0013 (skip scan of the keyed index)" | "0017 (live-key table)";
  keys: number;
  finished: number;
  ms: number;
  buffers: number;
}

const variants = [
  { variant: "0013 (skip scan of the keyed index)", schema: "bench_keyed_gy_0013", previous: true },
  { variant: "0017 (live-key table)", schema: "bench_keyed_gy_0017", previous: false },
] as const;

async function migrate(url: string, schema: string, dist: string | null): Promise<void> {
  const { createPawl } = (await import(dist ? pathToFileURL(dist).href : "../../dist/src/index.js")) as {
    createPawl: typeof CreatePawl;
  };
  const p = createPawl({ connectionString: url, schema });
  await p.migrate();
  await p.close();
}

/** Runs the rounds; `previousDist` is a build whose newest migration is 0016 (the keyed claim of 0013). */
export async function runKeyedGraveyard(o: {
  url: string;
  previousDist: string;
  keys?: number[];
  steps?: number;
  step?: number;
}): Promise<KeyedGraveyardPoint[]> {
  const pool = new pg.Pool({ connectionString: o.url, max: 3 });
  const points: KeyedGraveyardPoint[] = [];
  try {
    for (const v of variants) {
      await pool.query(`DROP SCHEMA IF EXISTS "${v.schema}" CASCADE`);
      await migrate(o.url, v.schema, v.previous ? o.previousDist : null);
    }
    for (const keys of o.keys ?? [200, 1000, 20_000]) {
      for (const v of variants) {
        const s = `"${v.schema}"`;
        const live = v.previous ? "" : `, ${s}.scheduler_keyed_live`;
        await pool.query(`TRUNCATE ${s}.scheduler_job_queue, ${s}.scheduler_concurrency_running${live}`);
        await pool.query(
          `INSERT INTO ${s}.scheduler_job_queue (type, concurrency_key, concurrency_limit, picked_by, picked_at, attempts)
           SELECT 't', 'k' || lpad((g * 7 % $1)::text, 6, '0'), 2, 'other-node', now(), 1
           FROM generate_series(1, 15) g, generate_series(1, 2)`,
          [keys],
        );
        // The horizon: a snapshot held open for the whole series.
        const holder = await pool.connect();
        try {
          await holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
          await holder.query("SELECT txid_current()");
          let finished = 0;
          for (let round = 0; round <= (o.steps ?? 4); round++) {
            if (round > 0) {
              const n = o.step ?? 10_000;
              await pool.query(
                `WITH ins AS (
                   INSERT INTO ${s}.scheduler_job_queue (type, concurrency_key, concurrency_limit)
                   SELECT 't', 'k' || lpad((floor(random() * $1))::int::text, 6, '0'), 2
                   FROM generate_series(1, $2) RETURNING id)
                 SELECT count(*) FROM ins`,
                [keys, n],
              );
              await pool.query(`DELETE FROM ${s}.scheduler_job_queue WHERE picked_by IS NULL`);
              // A node's claims see every key as it empties.
              if (!v.previous) await settle(pool, s);
              finished += n;
            }
            const ms: number[] = [];
            const buffers: number[] = [];
            for (let i = 0; i < 15; i++) {
              const c = await pool.connect();
              try {
                await c.query("BEGIN");
                const r = await c.query<{
                  "QUERY PLAN": [
                    {
                      "Execution Time": number;
                      Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number };
                    },
                  ];
                }>(
                  `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
                   SELECT * FROM ${s}.pawl_claim_keys(50, 'n1', ARRAY['t'], 0, NULL, NULL, NULL)`,
                );
                const plan = r.rows[0]!["QUERY PLAN"][0];
                ms.push(plan["Execution Time"]);
                buffers.push(plan.Plan["Shared Hit Blocks"] + plan.Plan["Shared Read Blocks"]);
              } finally {
                await c.query("ROLLBACK");
                c.release();
              }
            }
            points.push({
              variant: v.variant,
              keys,
              finished,
              ms: Math.round(median(ms) * 100) / 100,
              buffers: Math.round(median(buffers)),
            });
            console.error(JSON.stringify(points[points.length - 1]));
          }
          await holder.query("ROLLBACK");
        } finally {
          holder.release();
        }
      }
    }
    for (const v of variants) await pool.query(`DROP SCHEMA IF EXISTS "${v.schema}" CASCADE`);
  } finally {
    await pool.end();
  }
  return points;
}

/**
 * The new claim, committed, round the ring until it drops no more keys: what a node's claims do as keys
 * fill and empty. (Its drops are limited per claim, so this takes many claims for 20,000 keys.)
 */
async function settle(pool: pg.Pool, s: string): Promise<void> {
  let after: string | null = null;
  let before = -1;
  for (let i = 0; i < 5000; i++) {
    const r: pg.QueryResult<{ next: string | null }> = await pool.query(
      `SELECT claim_next_key AS next FROM ${s}.pawl_claim_keys(0, 'n1', ARRAY['t'], 0, NULL, NULL, $1) LIMIT 1`,
      [after],
    );
    after = r.rows[0]?.next ?? null;
    if (i % 50 === 49) {
      const n = Number((await pool.query(`SELECT count(*) AS n FROM ${s}.scheduler_keyed_live`)).rows[0].n);
      if (n === before) return;
      before = n;
    }
  }
}

/** The points as a markdown table: one row per keys x finished, a column per variant. */
export function keyedGraveyardTable(points: readonly KeyedGraveyardPoint[]): string {
  const out = [
    "| keys | finished keyed jobs (horizon held) | 0013: ms (buffers) | 0017: ms (buffers) |",
    "|---|---|---|---|",
  ];
  const rows = new Map<string, KeyedGraveyardPoint[]>();
  for (const p of points)
    rows.set(`${p.keys}/${p.finished}`, [...(rows.get(`${p.keys}/${p.finished}`) ?? []), p]);
  for (const [, ps] of rows) {
    const cell = (prefix: string) => {
      const p = ps.find((x) => x.variant.startsWith(prefix));
      return p ? `${p.ms} (${p.buffers})` : "-";
    };
    out.push(`| ${ps[0]!.keys} | ${ps[0]!.finished} | ${cell("0013")} | ${cell("0017")} |`);
  }
  return out.join("\n");
}

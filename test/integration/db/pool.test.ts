/**
 * pawl's own pool: every connection it opens plans pawl's prepared statements generically (re-planning
 * each claim cost more than running it) and without JIT, and a pool the user brings is left as it is.
 */
import { describe, expect, it } from "vitest";
import pg from "pg";
import { createPool } from "../../../src/db/pool.js";
import { silentLogger } from "../../../src/core/logger.js";
import { createPawl } from "../../../src/index.js";
import { databaseUrl, dropSchema, uniqueSchema } from "../../helpers/db.js";

async function planCacheModes(pool: pg.Pool, n: number): Promise<string[]> {
  // Held at once, so the pool has to open n connections.
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  try {
    const rows = await Promise.all(
      clients.map((c) => c.query<{ plan_cache_mode: string }>("SHOW plan_cache_mode")),
    );
    return rows.map((r) => r.rows[0]!.plan_cache_mode);
  } finally {
    for (const c of clients) c.release();
  }
}

describe("pawl's connection pool", () => {
  it("sets generic plans and no JIT on every connection it opens", async () => {
    const pool = createPool(databaseUrl, 3, silentLogger);
    try {
      expect(await planCacheModes(pool, 3)).toEqual(Array(3).fill("force_generic_plan"));
      const jit = await Promise.all([0, 1, 2].map(() => pool.query<{ jit: string }>("SHOW jit")));
      expect(jit.map((r) => r.rows[0]!.jit)).toEqual(["off", "off", "off"]);
    } finally {
      await pool.end();
    }
  });

  it("leaves a pool the user brings as it is", async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    const schema = uniqueSchema("upool");
    const pawl = createPawl({ pool, schema });
    try {
      await pawl.migrate();
      await pawl.enqueue("user.pool", {});
      expect(await planCacheModes(pool, 1)).toEqual(["auto"]);
    } finally {
      await pawl.close();
      await dropSchema(pool, schema);
      await pool.end();
    }
  });
});

import type pg from "pg";
import { createPawl } from "../../src/index.js";
import type { PawlConfig } from "../../src/input/config.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "./db.js";

/** A migrated schema of its own for one test file, with a raw pool for assertions. */
export async function setupSchema(prefix = "t"): Promise<{
  schema: string;
  pool: pg.Pool;
  cleanup: () => Promise<void>;
}> {
  const schema = uniqueSchema(prefix);
  const pool = testPool(8);
  const pawl = createPawl({ connectionString: databaseUrl, schema });
  await pawl.migrate();
  await pawl.close();
  return {
    schema,
    pool,
    cleanup: async () => {
      await dropSchema(pool, schema);
      await pool.end();
    },
  };
}

/** createPawl against the test database and a given schema. */
export function testPawl(schema: string, config: PawlConfig = {}) {
  return createPawl({ connectionString: databaseUrl, schema, ...config });
}

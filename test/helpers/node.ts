import { createPawl, type Pawl } from "../../src/index.js";
import type { PawlConfig } from "../../src/config.js";
import { databaseUrl } from "./db.js";

/** A node on the test database with fast polling, stopped by the returned cleanup. */
export function testNode(schema: string, config: PawlConfig = {}): Pawl {
  return createPawl({
    connectionString: databaseUrl,
    schema,
    concurrency: 4,
    pollIntervalMs: 50,
    completionFlushMs: 1,
    ...config,
  } as PawlConfig);
}

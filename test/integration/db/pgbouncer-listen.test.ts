/**
 * The postgres coordinator given only the pooler's URL: its LISTEN goes through PgBouncer in transaction
 * mode and hears nothing, ever, with no error from the server. The coordinator's probe (a NOTIFY on a
 * channel of its own, sent from another connection) goes unheard, so the node warns, naming
 * `directConnectionString`, reports the coordinator disconnected, and keeps running jobs by polling.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPawl, type Pawl } from "../../../src/index.js";
import { dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { assertPoolerAnswers, capturingLogger, poolerUrl, skipMessage } from "./pgbouncer-setup.js";

if (!poolerUrl) console.warn(skipMessage("pgbouncer-listen.test.ts"));

const schema = uniqueSchema("pgbouncer_listen");
const pool = testPool(2);
const logger = capturingLogger();
let node: Pawl;

describe.skipIf(!poolerUrl)("the postgres coordinator on the pooler's URL alone", () => {
  beforeAll(async () => {
    await assertPoolerAnswers(poolerUrl as string);
    node = createPawl({
      connectionString: poolerUrl as string,
      preparedStatements: false,
      coordinator: "postgres",
      schema,
      logger,
      concurrency: 4,
      pollIntervalMs: 50,
      polling: { maxDelayMs: 500, deepIdleDelayMs: 500 },
    });
    await node.migrate();
  }, 60_000);

  afterAll(async () => {
    await node?.stop({ graceMs: 2_000 }).catch(() => {});
    await node?.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("warns that LISTEN hears nothing, naming directConnectionString, and keeps running jobs", async () => {
    node.register("work", async () => {});
    const deaf = node.events.next(
      "coordinator:disconnected",
      ({ error }) => error.includes("directConnectionString"),
      30_000,
    );
    await node.start();
    await deaf;

    const warnings = logger.problems();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.level).toBe("warn");
    expect(warnings[0]?.message).toContain("LISTEN hears nothing");
    expect(warnings[0]?.message).toContain("directConnectionString");

    let left = 20;
    const all = new Promise<void>((resolve) => {
      node.events.on("job:succeeded", () => {
        if (--left === 0) resolve();
      });
    });
    await node.enqueueMany(Array.from({ length: 20 }, (_, i) => ({ type: "work", payload: { i } })));
    await all;
  }, 60_000);
});

/**
 * A console served before its schema is migrated (the demo prints its URL while an embedded database
 * boots; an operator may point a console at a schema nobody migrated) answers 503 with a Retry-After and
 * says what is missing, not a 500 with PostgreSQL's message; once migrated, the same page loads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { testPawl } from "../../helpers/pawl.js";

const schema = uniqueSchema("console_unmigrated");
const pool = testPool(2);
let pawl: Pawl;
let server: MetricsServer;

beforeAll(async () => {
  pawl = testPawl(schema);
  server = await serveMetrics(createMetrics(pawl), { port: 0, console: createConsole(pawl) });
});

afterAll(async () => {
  await server?.close();
  await pawl?.close();
  await dropSchema(pool, schema);
  await pool.end();
});

const consoleUrl = (path: string) => `${server.url.replace(/\/metrics$/, "/console")}${path}`;

describe("a console on a schema not migrated yet", () => {
  it("answers 503 naming the fix (not the database error), then serves the page once migrated", async () => {
    for (const path of ["", "/jobs", "/dlq"]) {
      const res = await fetch(consoleUrl(path));
      const body = await res.text();
      expect(res.status, `${path}: ${body}`).toBe(503);
      expect(res.headers.get("retry-after")).toBe("2");
      expect(body).toContain(`not migrated yet`);
      // PostgreSQL's own text (which names the relation) is logged, not sent.
      expect(body).not.toContain(`"${schema}.`);
      expect(body).toContain("migrate");
    }
    await pawl.migrate();
    const res = await fetch(consoleUrl(""));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("<html");
  });
});

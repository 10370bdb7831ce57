/**
 * A console run with the read-only role (docs/deployment.md#roles), actions on: an action PostgreSQL
 * refuses for lack of privilege answers 403 with pawl's message and the GRANT the schema's owner would
 * run, not a 500, and nothing is written. The roles are real, made with what `pawl grants` prints.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { main } from "../../../src/cli/main.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

const token = "t".repeat(32);
const readerRole = `pawl_con_reader_${randomBytes(3).toString("hex")}`;

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let owner: Pawl;
let reader: Pawl;
let server: MetricsServer;
let errors: string[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("console_priv"));
  await pool.query(`CREATE ROLE "${readerRole}" LOGIN`);
  let printed = "";
  const code = await main(
    ["grants", readerRole, "--read-only", "--schema", schema, "--database-url", databaseUrl],
    {
      stdout: (s) => void (printed += s),
      stderr: () => {},
      env: {},
    },
  );
  expect(code).toBe(0);
  await pool.query(printed);
  owner = testPawl(schema);
  const url = new URL(databaseUrl);
  url.username = readerRole;
  url.password = "";
  reader = testPawl(schema, { connectionString: url.toString() });
  const ui = createConsole(reader, {
    token,
    actions: true,
    logger: { error: (m: string) => void errors.push(m), warn: () => {}, info: () => {}, debug: () => {} },
  });
  server = await serveMetrics(createMetrics(reader), { port: 0, console: ui });
});

afterAll(async () => {
  await server?.close();
  await reader?.close();
  await owner?.close();
  await cleanup?.();
  await pool?.query(`DROP OWNED BY "${readerRole}"`).catch(() => {});
  await pool?.query(`DROP ROLE IF EXISTS "${readerRole}"`).catch(() => {});
});

const base = () => server.url.replace(/\/metrics$/, "/console");
const auth = { Authorization: `Bearer ${token}` };

/** The anti-forgery value, read from a page as a browser would. */
async function csrfOf(path: string): Promise<string> {
  const body = await (await fetch(`${base()}${path}`, { headers: auth })).text();
  const m = /name="csrf" value="([^"]+)"/.exec(body);
  expect(m).not.toBeNull();
  return m![1]!;
}

async function post(path: string, form: Record<string, string>) {
  const res = await fetch(`${base()}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      ...auth,
      Origin: new URL(base()).origin,
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: await res.text() };
}

describe("a console action the role may not perform", () => {
  it("answers 403 naming the grant to run, writes nothing and logs no server fault", async () => {
    errors = [];
    const job = await owner.enqueue("console.target", {}, { delayMs: 60_000 });
    const csrf = await csrfOf(`/jobs/${job.id}`);
    const refused = await post(`/jobs/${job.id}/cancel`, { csrf });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(`role "${readerRole}"`);
    expect(refused.body).toContain("Ask the schema's owner to run:");
    expect(refused.body).toContain(
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${readerRole}";`,
    );
    expect((await owner.getJob(job.id))!.status).toBe("PENDING");
    expect(errors).toEqual([]);
  });

  it("answers 403 with the advice when pawl knows no grant (pausing a queue is the owner's)", async () => {
    errors = [];
    const csrf = await csrfOf("/paused");
    const refused = await post("/paused/pause", { csrf, kind: "queue", name: "held" });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/permission denied.*only the schema's owner may do/s);
    expect(refused.body).not.toContain("Ask the schema's owner to run:");
    expect(await owner.listPaused()).toEqual([]);
    expect(errors).toEqual([]);
  });
});

/**
 * Bad arguments through the real CLI process: an id that is not one and a database URL that is not one
 * exit with 2 and a message naming the argument (README, "Exit codes"), print the usage line, never a
 * stack trace or a raw pg error, and write nothing. Runs bin/pawl.js when dist holds a fresh build of the
 * CLI, else the tsx entry point (other work in progress may not compile).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import type pg from "pg";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema } from "../../helpers/pawl.js";

const root = new URL("../../../", import.meta.url).pathname;
const compiled = `${root}dist/src/cli/main.js`;
const fresh = () =>
  existsSync(compiled) &&
  readdirSync(`${root}src`, { recursive: true, encoding: "utf8" }).every(
    (f) => statSync(`${root}src/${f}`).mtimeMs <= statSync(compiled).mtimeMs,
  );

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cliargs"));
});
afterAll(async () => {
  await cleanup();
});

const count = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all`)).rows[0].n);

/** Runs the pawl binary as a child process; resolves with its exit code and output. */
function pawlProcess(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const [file, args] = fresh()
    ? [process.execPath, [`${root}bin/pawl.js`, ...argv]]
    : [`${root}node_modules/.bin/tsx`, [`${root}src/cli/run.ts`, ...argv]];
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      file,
      args,
      { cwd: root, timeout: 60_000, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const db = () => ["--schema", schema, "--database-url", databaseUrl];

describe("bad arguments exit 2 through the binary", () => {
  it.each([
    [["job", "abc"], '<id> takes an id (a positive integer), not "abc"'],
    [["cancel", "x", "--reason", "typo"], '<id> takes an id (a positive integer), not "x"'],
    [["dlq", "retry", "12", "1;drop"], '<id...> takes an id (a positive integer), not "1;drop"'],
    [["signal", "abc", "{}"], '<id> takes an id (a positive integer), not "abc"'],
    [["flow", "0"], '<id> takes an id (a positive integer), not "0"'],
    [["pause", "job", "1.5"], '<id> takes an id (a positive integer), not "1.5"'],
  ])(
    "%j",
    async (argv, message) => {
      const before = await count();
      const r = await pawlProcess([...argv, ...db()]);
      expect(r.stderr).toContain(`pawl: ${message}\nusage: pawl `);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(await count()).toBe(before);
    },
    90_000,
  );

  it.each([
    ["not a url", "it does not parse as a URL"],
    ["http://127.0.0.1:5432/test", "its scheme is http: instead of postgres:"],
    ["postgres:///test", "it names no host"],
    // A URL that fails to parse may hold a password: the message never repeats the URL.
    ["postgres//app:s3cret@127.0.0.1/test", "it does not parse as a URL"],
  ])(
    "--database-url %j names the option, not a DNS error",
    async (url, why) => {
      const r = await pawlProcess(["jobs", "--schema", schema, "--database-url", url]);
      expect(r.stderr).toContain(`pawl: --database-url is not a PostgreSQL URL (${why})`);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toContain("ENOTFOUND");
      expect(r.stderr).not.toContain("s3cret");
    },
    90_000,
  );

  it("names DATABASE_URL when the bad URL came from the environment, and lets good URLs through", async () => {
    const r = await pawlProcess(["enqueue", "t", "{}", "--schema", schema], { DATABASE_URL: "not a url" });
    expect(r.stderr).toContain("pawl: DATABASE_URL is not a PostgreSQL URL (it does not parse as a URL)");
    expect(r.code).toBe(2);

    const ok = await pawlProcess(["jobs", "--json", "--schema", schema], { DATABASE_URL: databaseUrl });
    expect(ok).toMatchObject({ code: 0, stderr: "" });
    // A socket directory passes the check: the failure then comes from connecting, not from the URL.
    const socket = await pawlProcess(["jobs", "--schema", schema, "--database-url", "/nonexistent-dir"]);
    expect(socket.stderr).not.toContain("is not a PostgreSQL URL");
    expect(socket.code).toBe(1);
  }, 90_000);
});

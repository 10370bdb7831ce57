import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { promisify } from "node:util";
import type pg from "pg";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";
import { JobStore, type Job, type PawlClient } from "../../../src/index.js";
import { databaseUrl, dropSchema, uniqueSchema } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { runCli, runCliOn } from "../../helpers/cli.js";

const run = promisify(execFile);
const root = new URL("../../../", import.meta.url).pathname;

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let store: JobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cli"));
  pawl = testPawl(schema);
  store = new JobStore(pool, schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

/** Runs the CLI against this file's schema. */
const pawlCli = (...argv: string[]) => runCliOn(schema, ...argv);

const count = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all`)).rows[0].n);

/** Enqueues a job and moves it to the dead letter queue, as a handler failing for good would. */
async function deadJob(type: string): Promise<string> {
  const job = await pawl.enqueue(type, { n: 1 });
  const [claimed] = await store.claim({
    nodeId: "cli",
    limit: 1,
    types: [type],
    boostIntervalMs: 0,
    withPayload: false,
  });
  expect(claimed?.id).toBe(job.id);
  await store.kill("cli", [{ id: job.id, error: { attempt: 1, name: "Error", message: `${type} failed` } }]);
  expect((await pawl.getJob(job.id))?.status).toBe("DEAD");
  return job.id;
}

describe("help", () => {
  it("lists every command with --help, -h and help", async () => {
    for (const argv of [["--help"], ["-h"], ["help"]]) {
      const r = await runCli(argv);
      expect(r).toMatchObject({ code: 0, stderr: "" });
      for (const c of ["migrate", "enqueue", "jobs", "job", "cancel", "dlq list", "dlq retry", "dlq purge"]) {
        expect(r.stdout).toContain(`  ${c} `);
      }
      expect(r.stdout).toContain("--database-url");
    }
  });

  it("shows a command's options, and a group's commands", async () => {
    const enqueue = await runCli(["enqueue", "--help"]);
    expect(enqueue.code).toBe(0);
    expect(enqueue.stdout).toContain("Usage: pawl enqueue <type> <json>");
    for (const o of [
      "--priority",
      "--delay-ms",
      "--run-at",
      "--max-attempts",
      "--timeout-ms",
      "--unique-key",
      "--queue",
    ]) {
      expect(enqueue.stdout).toContain(o);
    }
    expect((await runCli(["help", "dlq", "purge"])).stdout).toContain("Usage: pawl dlq purge");
    expect((await runCli(["jobs", "-h"])).stdout).toContain("--status");
    const dlq = await runCli(["dlq", "--help"]);
    expect(dlq.code).toBe(0);
    expect(dlq.stdout).toContain("dlq retry");
  });
});

describe("bad arguments", () => {
  it.each([
    [[], "missing command"],
    [["frobnicate"], 'unknown command "frobnicate"'],
    [["jobs", "--bogus"], "unknown option --bogus"],
    [["jobs", "--limit"], "option --limit needs a value"],
    [["jobs", "--limit", "ten"], "--limit takes an integer"],
    [["jobs", "--limit", "0"], "--limit takes an integer from 1 to 1000"],
    [["jobs", "--status", "DONE"], 'unknown status "DONE"'],
    [["jobs", "extra"], 'unexpected argument "extra"'],
    [["job"], "missing <id>"],
    [["enqueue", "email.send"], "missing <json>"],
    [["enqueue", "email.send", "{to:"], "the payload is not valid JSON"],
    [["enqueue", "email.send", "{}", "--delay-ms", "soon"], "--delay-ms takes an integer"],
    [["enqueue", "email.send", "{}", "--run-at", "tomorrow"], "--run-at takes an ISO 8601 time"],
    [["dlq"], "missing dlq command"],
    [["dlq", "resurrect"], 'unknown command "dlq resurrect"'],
    [["dlq", "retry"], "missing <id...>"],
    [["dlq", "purge", "--before", "last week", "--yes"], "--before takes an ISO 8601 time"],
  ])("%j exits 2 with a message and the usage", async (argv, message) => {
    const before = await count();
    const r = await pawlCli(...argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain("usage: pawl ");
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await count()).toBe(before);
  });
});

describe("migrate", () => {
  it("creates the tables in a fresh schema, then finds nothing to do", async () => {
    const fresh = uniqueSchema("clim");
    try {
      const args = ["--schema", fresh, "--database-url", databaseUrl];
      const first = await runCli(["migrate", ...args]);
      expect(first).toMatchObject({ code: 0, stderr: "" });
      const versions = loadMigrations().map((m) => m.version);
      expect(first.stdout).toContain(`schema ${fresh}: applied migration`);
      for (const v of versions) expect(first.stdout).toMatch(new RegExp(`\\b${v}\\b`));
      const again = await runCli(["migrate", "--json", ...args]);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({
        schema: fresh,
        applied: [],
        version: versions.at(-1),
      });
    } finally {
      await dropSchema(pool, fresh);
    }
  });

  it("takes the schema and database from PAWL_SCHEMA and DATABASE_URL", async () => {
    const r = await runCli(["migrate"], { PAWL_SCHEMA: schema, DATABASE_URL: databaseUrl });
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toContain(`schema ${schema} is up to date`);
  });
});

describe("enqueue", () => {
  it("enqueues with every option", async () => {
    const r = await pawlCli(
      "enqueue",
      "email.send",
      '{"to":"a@b.c"}',
      "--priority",
      "high",
      "--delay-ms",
      "60000",
      "--max-attempts",
      "3",
      "--timeout-ms",
      "5000",
      "--unique-key",
      "welcome:a@b.c",
      "--queue",
      "mail",
    );
    expect(r).toMatchObject({ code: 0, stderr: "" });
    const id = /enqueued job (\d+) /.exec(r.stdout)?.[1];
    expect(id).toBeDefined();
    const job = await pawl.getJob(id!);
    expect(job).toMatchObject({
      type: "email.send",
      payload: { to: "a@b.c" },
      priority: 20,
      maxAttempts: 3,
      timeoutMs: 5000,
      uniqueKey: "welcome:a@b.c",
      queue: "mail",
      status: "PENDING",
    });
    expect(job!.scheduledTime.getTime()).toBeGreaterThan(Date.now() + 30_000);

    // The same unique key returns the live job and writes nothing.
    const before = await count();
    const dup = await pawlCli("enqueue", "email.send", "{}", "--unique-key", "welcome:a@b.c");
    expect(dup.code).toBe(0);
    expect(dup.stdout).toContain(`job ${id} is already live`);
    expect(await count()).toBe(before);
  });

  it("prints the job as JSON, with a numeric priority and runAt", async () => {
    const r = await pawlCli(
      "enqueue",
      "report",
      "[1,2]",
      "--priority",
      "77",
      "--run-at",
      "2030-01-01T00:00:00Z",
      "--json",
    );
    expect(r.code).toBe(0);
    const job = JSON.parse(r.stdout) as Job & { inserted: boolean };
    expect(job).toMatchObject({ type: "report", payload: [1, 2], priority: 77, inserted: true });
    expect(job.scheduledTime).toBe("2030-01-01T00:00:00.000Z");
  });

  it.each([
    [["bad type", "{}"], "INVALID_JOB_TYPE"],
    [["email.send", "{}", "--priority", "101"], "INVALID_PRIORITY"],
    [["email.send", "{}", "--priority", "urgent"], "INVALID_PRIORITY"],
    [["email.send", "{}", "--max-attempts", "0"], "INVALID_OPTION"],
    [["email.send", "{}", "--delay-ms", "5", "--run-at", "2030-01-01T00:00:00Z"], "INVALID_OPTION"],
  ])("refuses %j with exit 1 and writes nothing", async (argv, code) => {
    const before = await count();
    const r = await pawlCli("enqueue", ...argv);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(new RegExp(`^pawl: .+ \\(${code}\\)\\n$`));
    expect(await count()).toBe(before);
  });
});

describe("jobs, job and cancel", () => {
  it("lists jobs with filters, as a table and as JSON", async () => {
    const a = await pawl.enqueue("list.a", { i: 1 }, { queue: "qa" });
    const b = await pawl.enqueue("list.b", { i: 2 });
    await pawl.cancel(b.id);

    const table = await pawlCli("jobs");
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(
      /^ID\s+TYPE\s+QUEUE\s+STATUS\s+PRIORITY\s+ATTEMPTS\s+SCHEDULED\s+LAST ERROR$/,
    );
    expect(table.stdout).toMatch(new RegExp(`^${a.id}\\s+list\\.a\\s+qa\\s+PENDING\\s+10\\s+0/25`, "m"));
    expect(table.stdout).toMatch(new RegExp(`^${b.id}\\s+list\\.b\\s+default\\s+CANCELED`, "m"));

    const ids = async (...argv: string[]) => {
      const r = await pawlCli("jobs", "--json", ...argv);
      expect(r.code).toBe(0);
      return (JSON.parse(r.stdout) as Job[]).map((j) => j.id);
    };
    expect(await ids("--type", "list.a")).toEqual([a.id]);
    expect(await ids("--queue", "qa")).toEqual([a.id]);
    expect(await ids("--status", "canceled", "--type", "list.b")).toEqual([b.id]);
    expect(await ids("--status", "PENDING,CANCELED", "--limit", "2")).toEqual([b.id, a.id]);
    expect((await pawlCli("jobs", "--type", "nothing.here")).stdout).toBe("no jobs\n");
  });

  it("shows one job", async () => {
    const job = await pawl.enqueue("show.me", { deep: { x: [1] } }, { uniqueKey: "show-1" });
    const text = await pawlCli("job", job.id);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^id:\s+\d+$/m);
    expect(text.stdout).toMatch(/^type:\s+show\.me$/m);
    expect(text.stdout).toMatch(/^unique key:\s+show-1$/m);
    expect(text.stdout).toContain('"deep"');
    const asJson = await pawlCli("job", job.id, "--json");
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      id: job.id,
      payload: { deep: { x: [1] } },
      status: "PENDING",
    });

    const missing = await pawlCli("job", "987654321");
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toBe("pawl: no job with id 987654321 (JOB_NOT_FOUND)\n");
    const bad = await pawlCli("job", "abc");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('<id> takes an id (a positive integer), not "abc"');
  });

  it("cancels a job with a reason, and leaves a finished one alone", async () => {
    const job = await pawl.enqueue("cancel.me", {});
    const r = await pawlCli("cancel", job.id, "--reason", "not needed");
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`canceled job ${job.id} (was PENDING)\n`);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "CANCELED", cancelReason: "not needed" });

    const again = await pawlCli("cancel", job.id, "--json");
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ outcome: "already-final", previousStatus: "CANCELED" });
    const missing = await pawlCli("cancel", "987654321");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("(JOB_NOT_FOUND)");
  });
});

describe("dlq", () => {
  it("lists, retries and purges DEAD jobs", async () => {
    const retried = await deadJob("dlq.retry");
    const purged = await deadJob("dlq.purge");
    const kept = await deadJob("dlq.kept");

    const list = await pawlCli("dlq", "list");
    expect(list.code).toBe(0);
    expect(list.stdout.split("\n")[0]).toMatch(/^ID\s+TYPE\s+QUEUE\s+ATTEMPTS\s+DIED\s+LAST ERROR$/);
    expect(list.stdout).toMatch(
      new RegExp(`^${retried}\\s+dlq\\.retry\\s+default\\s+1/25\\s+\\S+Z\\s+dlq\\.retry failed$`, "m"),
    );
    const listed = await pawlCli("dlq", "list", "--type", "dlq.purge", "--limit", "5", "--json");
    expect((JSON.parse(listed.stdout) as Job[]).map((j) => j.id)).toEqual([purged]);

    // retry: the DEAD one goes back to PENDING; an id that is not DEAD is reported and makes the exit 1.
    const r = await pawlCli("dlq", "retry", retried);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`retried 1 job: ${retried}\n`);
    expect(await pawl.getJob(retried)).toMatchObject({ status: "PENDING", attempts: 0 });
    const partial = await pawlCli("dlq", "retry", retried, "--json");
    expect(partial.code).toBe(1);
    expect(JSON.parse(partial.stdout)).toEqual({ retried: [], duplicates: [], notDead: [retried] });
    expect(partial.stderr).toContain(`not retried (no such DEAD job): ${retried}`);

    // purge refuses without --yes and deletes nothing.
    const refused = await pawlCli("dlq", "purge", "--type", "dlq.purge");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--yes");
    expect((await pawl.getJob(purged))?.status).toBe("DEAD");

    // --before a time long past matches nothing; then the type filter deletes just that job.
    const none = await pawlCli("dlq", "purge", "--before", "2000-01-01T00:00:00Z", "--yes", "--json");
    expect(JSON.parse(none.stdout)).toEqual({ purged: 0 });
    const done = await pawlCli("dlq", "purge", "--type", "dlq.purge", "--yes");
    expect(done).toMatchObject({ code: 0, stdout: "purged 1 dead job\n" });
    expect(await pawl.getJob(purged)).toBeNull();
    expect((await pawl.getJob(kept))?.status).toBe("DEAD");

    const all = await pawlCli("dlq", "purge", "-y");
    expect(all.code).toBe(0);
    expect(await pawl.getJob(kept)).toBeNull();
    expect((await pawlCli("dlq", "list")).stdout).toBe("the dead letter queue is empty\n");
  });

  it("says when a retried job was canceled as a duplicate of the live job holding its unique key", async () => {
    const dead = await pawl.enqueue("dlq.keyed", {}, { uniqueKey: "cli-dup" });
    // DEAD as a node leaves it: moved to the finished table (migration 0005), column by name (the tables'
    // column orders differ since 0016's time_partitioned and 0018's parent_job_id).
    await pool.query(
      `WITH g AS (DELETE FROM "${schema}".scheduler_job_queue j WHERE id = $1 RETURNING j)
       INSERT INTO "${schema}".scheduler_job_finished
       SELECT (jsonb_populate_record(NULL::"${schema}".scheduler_job_finished,
                                     to_jsonb(g.j) || '{"status": "DEAD"}')).* FROM g`,
      [dead.id],
    );
    const live = await pawl.enqueue("dlq.keyed", {}, { uniqueKey: "cli-dup" });
    expect(live.inserted).toBe(true);

    const r = await pawlCli("dlq", "retry", dead.id);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `job ${dead.id} canceled as a duplicate: live job ${live.id} holds its unique key`,
    );
    expect(r.stderr).not.toContain("no such DEAD job");
    expect((await pawl.getJob(dead.id))?.status).toBe("CANCELED");
  });
});

describe("failures outside pawl", () => {
  it("reports an unmigrated schema, a bad schema name and an unreachable database without a stack", async () => {
    const unmigrated = await runCli([
      "jobs",
      "--schema",
      uniqueSchema("none"),
      "--database-url",
      databaseUrl,
    ]);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toContain('has "pawl migrate" run for this schema?');

    const badName = await runCli(["jobs", "--schema", "Not-A-Schema", "--database-url", databaseUrl]);
    expect(badName.code).toBe(1);
    expect(badName.stderr).toContain("(INVALID_SCHEMA_NAME)");

    const down = await runCli([
      "jobs",
      "--schema",
      schema,
      "--database-url",
      "postgres://postgres@127.0.0.1:1/test",
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe("pawl: connect ECONNREFUSED 127.0.0.1:1\n");
  });
});

describe("the executable", () => {
  const compiled = `${root}dist/src/cli/main.js`;

  /** Whether dist has the CLI and it is newer than every source file of src/cli. */
  const fresh = () =>
    existsSync(compiled) &&
    readdirSync(`${root}src/cli`, { recursive: true, encoding: "utf8" }).every(
      (f) => statSync(`${root}src/cli/${f}`).mtimeMs <= statSync(compiled).mtimeMs,
    );

  let built = false;
  beforeAll(async () => {
    if (fresh()) {
      built = true;
      return;
    }
    // Other work in progress may not compile; then the tsx entry point stands in for the binary.
    built = await run("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: root }).then(
      () => fresh(),
      () => false,
    );
  }, 180_000);

  it("prints the help as a child process", async () => {
    const [file, args] = built
      ? ["node", ["bin/pawl.js", "--help"]]
      : [`${root}node_modules/.bin/tsx`, ["src/cli/run.ts", "--help"]];
    const { stdout, stderr } = await run(file, args, { cwd: root, timeout: 60_000 });
    expect(stderr).toBe("");
    expect(stdout).toContain("Usage: pawl <command> [options]");
    expect(stdout).toContain("dlq purge");
  }, 90_000);
});

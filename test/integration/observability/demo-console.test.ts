/**
 * The first thing a newcomer sees: `npm start`'s demo says where its console and /metrics are in its
 * first lines, and the console there has its actions on. The demo runs as `npm start` runs it (tsx, the
 * package's own exports) on the test database in a schema of its own, on a free port, and is stopped with
 * SIGINT as a person would.
 */
import { afterAll, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";

const schema = uniqueSchema("demo");
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  const pool = testPool(1);
  await dropSchema(pool, schema);
  await pool.end();
});

it("prints the console's and /metrics' URLs in its first lines, and serves the console with actions on", async () => {
  child = spawn(process.execPath, ["--import", "tsx", "examples/demo/main.ts"], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PAWL_SCHEMA: schema, PAWL_DEMO_PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => (stdout += chunk));
  /** Resolves once the output matches (on the output's own events, no polling). */
  const printed = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (!re.test(stdout)) return;
        child!.stdout!.off("data", look);
        resolve();
      };
      child!.stdout!.on("data", look);
      child!.once("exit", (code) => reject(new Error(`the demo exited (${code}) early:\n${stdout}`)));
      look();
    });
  await printed(/^(.*\n){2}/);
  const lines = stdout.split("\n").slice(0, 2);
  // Line 1 says which database; line 2 where to look.
  expect(lines[0]).toMatch(/^\[demo\] /);
  const m =
    /^\[demo\] console: (http:\/\/\S+\/console) \(actions on, token (\S+)\) {2}metrics: (http:\/\/\S+\/metrics)$/.exec(
      lines[1]!,
    );
  expect(m, lines[1]).not.toBeNull();
  const [, consoleUrl, token, metricsUrl] = m!;
  const auth = { headers: { Authorization: `Bearer ${token}` } };

  // The pages read the schema, which exists once the node runs (it says so).
  await printed(/running on schema/);
  expect((await fetch(consoleUrl!)).status).toBe(401);
  const overview = await fetch(consoleUrl!, auth);
  expect(overview.status).toBe(200);
  expect(await overview.text()).toContain("<title>");
  const metrics = await fetch(metricsUrl!);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain("pawl_");
  // Actions on: the paused page offers to pause a queue (a read-only console renders no form).
  const paused = await (await fetch(`${consoleUrl}/paused`, auth)).text();
  expect(paused).toContain('method="post"');

  const exited = new Promise<number | null>((resolve) => child!.once("exit", (code) => resolve(code)));
  child.kill("SIGINT");
  expect(await exited).toBe(0);
}, 120_000);

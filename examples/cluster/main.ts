/**
 * Runs the three nodes of the cluster example as child processes of one command (the README shows how to
 * run each in its own terminal instead). The transport comes from PAWL_COORDINATOR (default `postgres`;
 * `none`, `amqp://...` and `hazelcast://...` work the same). Ctrl-C stops all three gracefully.
 *
 * With EXAMPLE_BRIEF=1 (CI) the run uses a fresh schema, waits until the nodes have worked through one
 * batch and stopped, drops the schema and exits 0; any node failing makes it exit 1.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const here = dirname(fileURLToPath(import.meta.url));
const tsx = join(here, "..", "..", "node_modules", ".bin", "tsx");
// examples/run-all.ts (CI) passes --once; EXAMPLE_BRIEF=1 does the same.
const brief = process.env.EXAMPLE_BRIEF === "1" || process.argv.includes("--once");
const run = randomBytes(4).toString("hex");
const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const schema = process.env.PAWL_SCHEMA ?? (brief ? `pawl_example_${run}` : "pawl_example_cluster");

const env = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  PAWL_SCHEMA: schema,
  EXAMPLE_RUN: run,
  ...(brief ? { EXAMPLE_BRIEF: "1" } : {}),
};
const children: ChildProcess[] = ["a", "b", "c"].map((name) =>
  spawn(tsx, [join(here, "node.ts"), name], { env, stdio: "inherit" }),
);
const exits = children.map(
  (child) => new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1))),
);

let forwarded = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (forwarded) return;
    forwarded = true;
    for (const child of children) child.kill("SIGTERM");
  });
}

const codes = await Promise.all(exits);
if (brief) {
  const pool = new pg.Pool({ connectionString: databaseUrl });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
  await pool.end();
}
console.log(`cluster example: nodes exited with ${codes.join(", ")}`);
process.exit(codes.every((c) => c === 0) ? 0 : 1);

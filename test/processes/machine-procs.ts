/**
 * Processes for the durable-machine process tests: a spawned script (a node of
 * ./machine-node-process.ts, or a sender of ./machine-sender.ts), and the enqueue of machine jobs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { databaseUrl } from "../helpers/db.js";
import { fastCluster } from "./harness.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const tsx = join(root, "node_modules", ".bin", "tsx");

/** Every process a test spawned, to kill at its end. */
export const procs: Proc[] = [];

/** A spawned script of `schema`; `ready` resolves with its first JSON line of `event`. */
export class Proc {
  readonly child: ChildProcess;
  pid = 0;
  out = "";
  err = "";
  readonly exited: Promise<void>;
  constructor(schema: string, script: string, env: Record<string, string>) {
    this.child = spawn(tsx, [join(root, "test", "processes", script)], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl, PAWL_SCHEMA: schema, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout?.on("data", (c: Buffer) => (this.out += c.toString()));
    this.child.stderr?.on("data", (c: Buffer) => (this.err += c.toString()));
    this.exited = new Promise((resolve) => this.child.once("exit", () => resolve()));
    procs.push(this);
  }
  line(event: string): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const l = this.out.split("\n").find((x) => x.includes(`"event":"${event}"`));
        if (l) {
          const msg = JSON.parse(l) as Record<string, unknown>;
          if (typeof msg.pid === "number") this.pid = msg.pid;
          resolve(msg);
          return true;
        }
        return false;
      };
      if (look()) return;
      this.child.stdout?.on("data", look);
      void this.exited.then(() => {
        if (!look()) reject(new Error(`process exited before ${event}: ${this.err.slice(-2000)}`));
      });
    });
  }
  kill9(): void {
    try {
      if (this.pid) process.kill(this.pid, "SIGKILL");
    } catch {
      // already gone
    }
    this.child.kill("SIGKILL");
  }
}

let nodeCount = 0;

/** Starts a machine node on `schema` and waits until it is ready. */
export async function startNode(schema: string): Promise<Proc> {
  const p = new Proc(schema, "machine-node-process.ts", {
    PAWL_NODE_ID: `${schema}-n${nodeCount++}`,
    NODE_OPTIONS_JSON: JSON.stringify({ ...fastCluster, schema, connectionString: databaseUrl }),
  });
  await p.line("ready");
  return p;
}

/** Enqueues one job of `type` per payload (plain SQL: no pawl client in the test process). */
export async function enqueue(
  pool: pg.Pool,
  schema: string,
  type: string,
  payloads: unknown[],
): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO "${schema}".scheduler_job_queue (type, payload) SELECT $1, p FROM unnest($2::jsonb[]) p RETURNING id`,
    [type, payloads.map((p) => JSON.stringify(p))],
  );
  return rows.map((r) => r.id);
}

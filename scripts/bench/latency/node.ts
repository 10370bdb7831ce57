/**
 * One of the two pawl nodes of `--latency --coordinator <x>` (started by latency/coordinator-latency.ts):
 *
 * - `receiver`: registers `ping` with `pollIntervalMs: 30000` and the coordinator under test, starts,
 *   and reports the monotonic time at which each handler starts.
 * - `enqueuer`: does not register `ping` (so it never runs it, and no local wakeup can help), enqueues
 *   one critical job per command and reports the monotonic time at which the enqueue call started.
 *
 * With `defaults` (`--idle-pickup`, latency/idle-pickup.ts) both take pawl's defaults, nothing but the
 * connection string and the schema: the receiver a node, the enqueuer a bare `PawlClient` (a web process),
 * and the job an ordinary one (default priority, due now).
 *
 * process.hrtime is CLOCK_MONOTONIC, one clock for every process of the machine, so the parent subtracts
 * the two processes' timestamps directly. Timestamps are taken before any IPC, which stays out of the
 * measured interval.
 */
import { createPawl, PawlClient } from "../../../dist/src/index.js";
import { nowNs } from "../lib/common.js";

export interface NodeInput {
  role: "receiver" | "enqueuer";
  url: string;
  schema: string;
  coordinator: string;
  /**
   * pawl's defaults for everything but the URL and schema; `coordinator` then only when not empty (the
   * old default, `none`, for a baseline).
   */
  defaults?: boolean;
}

export type NodeMessage =
  | { kind: "ready" }
  | { kind: "started"; i: number; t: string }
  | { kind: "wakeup"; source: string; t: string }
  | { kind: "enqueued"; i: number; t0: string; t1: string }
  | { kind: "stats"; stats: Record<string, unknown> }
  | { kind: "failed"; message: string };

export type NodeCommand = { cmd: "enqueue"; i: number } | { cmd: "stats" } | { cmd: "close" };

const input = JSON.parse(process.argv[2] ?? "{}") as NodeInput;
const send = (m: NodeMessage) => process.send!(m);

async function main(): Promise<void> {
  const stats = {
    wakeups: { coordinator: 0, local: 0 } as Record<string, number>,
    polls: {} as Record<string, number>,
    coordinatorDisconnects: 0,
    errors: [] as string[],
  };
  if (input.defaults && input.role === "enqueuer") return webProcess();
  const pawl = createPawl(
    input.defaults
      ? {
          connectionString: input.url,
          schema: input.schema,
          ...(input.coordinator ? { coordinator: input.coordinator } : {}),
        }
      : {
          connectionString: input.url,
          schema: input.schema,
          coordinator: input.coordinator,
          ...(input.role === "receiver" ? { pollIntervalMs: 30_000, concurrency: 10 } : {}),
        },
  );
  pawl.on("wakeup", (e) => {
    stats.wakeups[e.source] = (stats.wakeups[e.source] ?? 0) + 1;
    // When the hint arrived: splits the latency into transport (enqueue -> wakeup) and claim (wakeup -> handler).
    if (input.role === "receiver") send({ kind: "wakeup", source: e.source, t: nowNs().toString() });
  });
  pawl.on("poll", (e) => (stats.polls[e.mode] = (stats.polls[e.mode] ?? 0) + 1));
  pawl.on("coordinator:disconnected", () => stats.coordinatorDisconnects++);
  pawl.on("error", (e) => {
    if (stats.errors.length < 10) stats.errors.push(`${e.where}: ${e.error.message}`);
  });

  if (input.role === "receiver") {
    pawl.register("ping", (payload: { i: number }) => {
      const t = nowNs();
      send({ kind: "started", i: payload.i, t: t.toString() });
    });
    await pawl.start();
  }

  process.on("message", (raw) => {
    const m = raw as NodeCommand;
    if (m.cmd === "enqueue") {
      const t0 = nowNs();
      pawl.enqueue("ping", { i: m.i }, input.defaults ? {} : { priority: "critical" }).then(
        () => send({ kind: "enqueued", i: m.i, t0: t0.toString(), t1: nowNs().toString() }),
        (e: unknown) => send({ kind: "failed", message: `enqueue ${m.i}: ${(e as Error).message}` }),
      );
    } else if (m.cmd === "stats") {
      send({ kind: "stats", stats });
    } else if (m.cmd === "close") {
      pawl.close().finally(() => process.exit(0));
    }
  });
  send({ kind: "ready" });
}

/** The enqueuer of `defaults`: a bare client, as a web process holds, with nothing but the URL. */
function webProcess(): void {
  const client = new PawlClient({ connectionString: input.url, schema: input.schema });
  process.on("message", (raw) => {
    const m = raw as NodeCommand;
    if (m.cmd === "enqueue") {
      const t0 = nowNs();
      client.enqueue("ping", { i: m.i }).then(
        () => send({ kind: "enqueued", i: m.i, t0: t0.toString(), t1: nowNs().toString() }),
        (e: unknown) => send({ kind: "failed", message: `enqueue ${m.i}: ${(e as Error).message}` }),
      );
    } else if (m.cmd === "stats") {
      send({ kind: "stats", stats: {} });
    } else if (m.cmd === "close") {
      client.close().finally(() => process.exit(0));
    }
  });
  send({ kind: "ready" });
}

main().catch((e: unknown) => {
  send({ kind: "failed", message: (e as Error).stack ?? String(e) });
  setTimeout(() => process.exit(1), 100);
});

/**
 * `--latency --coordinator <none|postgres|amqp|hazelcast>` (issue 4): pickup latency across two node
 * processes. The receiver polls every 30 s, so a pickup within milliseconds can only come from the
 * coordinator's wakeup. Samples are taken one at a time: enqueue, wait for the handler to start, a short
 * gap (the job completes, the receiver goes idle), next.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { resetPawlSchema } from "../systems/pawl.js";
import { coordinatorSpec } from "../lib/coordinators.js";
import { deferred, sleep, summarize, withTimeout } from "../lib/common.js";
import type { NodeCommand, NodeInput, NodeMessage } from "./node.js";

export const LATENCY_SCHEMA = "bench_pawl_latency";

export interface CoordinatorLatencyResult {
  coordinator: string;
  spec: string;
  samples: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  /** Median time the enqueue call took in the enqueuing process (ms). */
  enqueueCallP50: number;
  /** Median enqueue call start -> the receiver's first wakeup after it (ms): insert, publish, transport. */
  toWakeupP50: number;
  /** Median wakeup -> handler start in the receiver (ms): the claim. */
  wakeupToHandlerP50: number;
  /** Samples picked up without a coordinator wakeup in between (found by a poll). */
  withoutWakeup: number;
  /** What the receiver saw: wakeups by source, polls by mode, errors. */
  receiver: Record<string, unknown>;
  enqueuer: Record<string, unknown>;
}

function redact(spec: string): string {
  return spec.replace(/\/\/([^:/@]+):([^@]+)@/, "//$1:***@");
}

/** One node.ts process, and its messages. */
export class NodeProcess {
  private readonly child: ChildProcess;
  private readonly listeners = new Set<(m: NodeMessage) => void>();
  readonly exited: Promise<void>;

  constructor(input: NodeInput) {
    const path = fileURLToPath(new URL("./node.ts", import.meta.url));
    this.child = fork(path, [JSON.stringify(input)], {
      execArgv: process.execArgv,
      stdio: ["ignore", 2, "inherit", "ipc"],
    });
    this.child.on("message", (m) => {
      for (const l of this.listeners) l(m as NodeMessage);
    });
    this.exited = new Promise((resolve) => this.child.on("exit", () => resolve()));
  }

  on(listener: (m: NodeMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  next<K extends NodeMessage["kind"]>(
    kind: K,
    timeoutMs: number,
  ): Promise<Extract<NodeMessage, { kind: K }>> {
    const d = deferred<Extract<NodeMessage, { kind: K }>>();
    const off = this.on((m) => {
      if (m.kind === kind) {
        off();
        d.resolve(m as Extract<NodeMessage, { kind: K }>);
      } else if (m.kind === "failed") {
        off();
        d.reject(new Error(m.message));
      }
    });
    return withTimeout(d.promise, timeoutMs, `node message ${kind}`);
  }

  send(cmd: NodeCommand): void {
    this.child.send(cmd);
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null) {
      this.send({ cmd: "close" });
      await withTimeout(this.exited, 30_000, "node close").catch(() => this.child.kill("SIGKILL"));
    }
  }
}

/** Measures one coordinator. */
export async function coordinatorLatency(options: {
  url: string;
  coordinator: string;
  samples: number;
  warmup: number;
  gapMs: number;
}): Promise<CoordinatorLatencyResult> {
  const spec = coordinatorSpec(options.coordinator);
  const admin = new pg.Pool({ connectionString: options.url, max: 1 });
  await resetPawlSchema(options.url, LATENCY_SCHEMA, admin);
  await admin.end();

  const base = { url: options.url, schema: LATENCY_SCHEMA, coordinator: spec };
  const receiver = new NodeProcess({ ...base, role: "receiver" });
  const enqueuer = new NodeProcess({ ...base, role: "enqueuer" });
  try {
    await Promise.all([receiver.next("ready", 120_000), enqueuer.next("ready", 120_000)]);
    await sleep(500);
    const started = new Map<number, bigint>();
    const startedWaiters = new Map<number, (t: bigint) => void>();
    receiver.on((m) => {
      if (m.kind !== "started") return;
      const t = BigInt(m.t);
      started.set(m.i, t);
      startedWaiters.get(m.i)?.(t);
    });
    const wakeups: bigint[] = [];
    receiver.on((m) => {
      if (m.kind === "wakeup" && m.source === "coordinator") wakeups.push(BigInt(m.t));
    });
    const latencies: number[] = [];
    const calls: number[] = [];
    const toWakeup: number[] = [];
    const wakeupToHandler: number[] = [];
    let withoutWakeup = 0;
    // Without a coordinator only the receiver's polls find the job (up to its 30 s interval, or its
    // 60 s deep idle), hence the long per-sample timeout.
    const perSampleTimeout = 130_000;
    for (let k = 0; k < options.warmup + options.samples; k++) {
      const pickedUp = deferred<bigint>();
      startedWaiters.set(k, pickedUp.resolve);
      const already = started.get(k);
      if (already !== undefined) pickedUp.resolve(already);
      const enqueued = enqueuer.next("enqueued", perSampleTimeout);
      enqueuer.send({ cmd: "enqueue", i: k });
      const e = await enqueued;
      const t = await withTimeout(
        pickedUp.promise,
        perSampleTimeout,
        `pickup of sample ${k} (${options.coordinator})`,
      );
      startedWaiters.delete(k);
      if (k >= options.warmup) {
        const t0 = BigInt(e.t0);
        latencies.push(Number(t - t0) / 1e6);
        calls.push(Number(BigInt(e.t1) - t0) / 1e6);
        const w = wakeups.find((x) => x >= t0 && x <= t);
        if (w === undefined) withoutWakeup++;
        else {
          toWakeup.push(Number(w - t0) / 1e6);
          wakeupToHandler.push(Number(t - w) / 1e6);
        }
      }
      wakeups.length = 0;
      await sleep(options.gapMs);
    }
    const receiverStats = receiver.next("stats", 10_000);
    receiver.send({ cmd: "stats" });
    const enqueuerStats = enqueuer.next("stats", 10_000);
    enqueuer.send({ cmd: "stats" });
    const s = summarize(latencies);
    return {
      coordinator: options.coordinator,
      spec: redact(spec),
      samples: latencies.length,
      ...s,
      enqueueCallP50: summarize(calls).p50,
      toWakeupP50: summarize(toWakeup).p50,
      wakeupToHandlerP50: summarize(wakeupToHandler).p50,
      withoutWakeup,
      receiver: (await receiverStats).stats,
      enqueuer: (await enqueuerStats).stats,
    };
  } finally {
    await Promise.all([receiver.close(), enqueuer.close()]);
  }
}

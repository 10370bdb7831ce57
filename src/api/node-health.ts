/**
 * Gathers the facts of `pawl.health()` and hands them to the pure verdict (logic/health.ts). The probe
 * follows the node's own events from construction on (the last heartbeat, the last poll), so a health
 * call costs one `select 1` and reads nothing else from the database. The `select 1` is bounded by a
 * timeout: a pool whose connections are all held, or a server that stopped answering, makes the check
 * fail in time instead of hanging the probe, and the pending query is left to the pool's own timeouts.
 */
import type pg from "pg";
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import { healthReport, type HealthFacts, type HealthReport } from "../logic/health.js";
import { outcomeBacklogLimit, type NodeRuntime } from "../node/node-runtime.js";
import type { Coordinator } from "../../coordinators/spi.js";

/** Options of `pawl.health()`. */
export interface HealthOptions {
  /** How long the database may take to answer `select 1` before the check fails (ms). Default 2000. */
  databaseTimeoutMs?: number;
}

/** What the probe reads of the node at the time of a call. */
export interface HealthSubject {
  pool: pg.Pool;
  state: "running" | "stopping" | "client";
  runtime: NodeRuntime | null;
  coordinator: Coordinator | null;
  heartbeatIntervalMs: number;
  deadNodeThresholdMs: number;
}

/** Follows a node's events for the facts only events tell (see the file's comment). */
export class HealthProbe {
  private lastHeartbeatAt: number | null = null;
  private lastPoll: { at: number; delayMs: number } | null = null;
  private startedAt: number | null = null;
  private readonly off: (() => void)[];

  constructor(
    events: PawlEventEmitter,
    private readonly clock: Clock,
  ) {
    this.off = [
      events.on("cluster:heartbeat", () => {
        this.lastHeartbeatAt = this.clock.now();
      }),
      events.on("poll", (e) => {
        this.lastPoll = { at: this.clock.now(), delayMs: e.delayMs };
      }),
      events.on("node:started", () => {
        this.startedAt = this.clock.now();
      }),
    ];
  }

  /** The report on `subject` now. Never rejects: a failed database check is part of the report. */
  async report(subject: HealthSubject, options: HealthOptions = {}): Promise<HealthReport> {
    const timeoutMs = options.databaseTimeoutMs ?? 2000;
    const database = await pingDatabase(subject.pool, timeoutMs, this.clock);
    const runtime = subject.runtime;
    const status = subject.coordinator?.status();
    const facts: HealthFacts = {
      state: subject.state,
      database,
      lastHeartbeatAt: this.lastHeartbeatAt,
      startedAt: this.startedAt,
      heartbeatIntervalMs: subject.heartbeatIntervalMs,
      deadNodeThresholdMs: subject.deadNodeThresholdMs,
      lastPoll: this.lastPoll,
      room: runtime ? runtime.room() : 0,
      pendingOutcomes: runtime ? runtime.pendingOutcomes : 0,
      outcomeBacklogLimit,
      coordinator: status ? { transport: status.transport, connected: status.connected } : null,
    };
    return healthReport(facts, this.clock.now());
  }

  /** Stops following the events. */
  close(): void {
    for (const off of this.off) off();
  }
}

async function pingDatabase(
  pool: pg.Pool,
  timeoutMs: number,
  clock: Clock,
): Promise<HealthFacts["database"]> {
  const started = performance.now();
  let timer: ReturnType<Clock["setTimeout"]> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = clock.setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const query = pool.query("select 1").then(
    () => "ok" as const,
    // The reason only: a driver's message can carry a host, a role or a database name.
    (error: unknown) => `${(error as { code?: unknown }).code ?? "error"}` as const,
  );
  try {
    const answer = await Promise.race([query, timeout]);
    if (answer === "ok") return { ok: true, latencyMs: performance.now() - started };
    if (answer === "timeout") return { ok: false, reason: `no answer within ${timeoutMs} ms` };
    return { ok: false, reason: `the query failed (${answer})` };
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer);
  }
}

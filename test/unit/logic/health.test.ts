/**
 * The health verdict, as a table: each check's state from the facts at `now`, and the readiness and
 * liveness answers the probes serve.
 */
import { describe, expect, it } from "vitest";
import { healthReport, type HealthFacts } from "../../../src/logic/health.js";

const now = 1_000_000;
const base: HealthFacts = {
  state: "running",
  database: { ok: true, latencyMs: 2 },
  lastHeartbeatAt: now - 1_000,
  startedAt: now - 60_000,
  heartbeatIntervalMs: 5_000,
  deadNodeThresholdMs: 15_000,
  lastPoll: { at: now - 500, delayMs: 1_000 },
  room: 4,
  pendingOutcomes: 0,
  outcomeBacklogLimit: 2_000,
  coordinator: { transport: "postgres", connected: true },
};
const at = (patch: Partial<HealthFacts>) => healthReport({ ...base, ...patch }, now);

describe("healthReport", () => {
  it("a running node with everything fresh passes, ready and live", () => {
    const r = at({});
    expect(r).toMatchObject({ status: "pass", ready: true, live: true, state: "running", at: now });
    for (const c of Object.values(r.checks)) expect(c.status).toBe("pass");
  });

  it.each<[string, Partial<HealthFacts>, string, "pass" | "warn" | "fail" | "skip"]>([
    ["database down", { database: { ok: false, reason: "no answer within 2000 ms" } }, "database", "fail"],
    ["heartbeat 14 s old", { lastHeartbeatAt: now - 14_000 }, "heartbeat", "warn"],
    ["heartbeat 15 s old", { lastHeartbeatAt: now - 15_000 }, "heartbeat", "warn"],
    ["heartbeat 15.001 s old", { lastHeartbeatAt: now - 15_001 }, "heartbeat", "fail"],
    ["heartbeat 10 s old (2 intervals)", { lastHeartbeatAt: now - 10_000 }, "heartbeat", "pass"],
    ["no heartbeat, started 1 s ago", { lastHeartbeatAt: null, startedAt: now - 1_000 }, "heartbeat", "pass"],
    [
      "no heartbeat, started 20 s ago",
      { lastHeartbeatAt: null, startedAt: now - 20_000 },
      "heartbeat",
      "fail",
    ],
    [
      "poll overdue beyond its delay + threshold",
      { lastPoll: { at: now - 16_001, delayMs: 1_000 } },
      "claimLoop",
      "fail",
    ],
    [
      "poll at its delay + threshold",
      { lastPoll: { at: now - 16_000, delayMs: 1_000 } },
      "claimLoop",
      "pass",
    ],
    [
      "a deep-idle poll 60 s ago that chose 60 s",
      { lastPoll: { at: now - 60_000, delayMs: 60_000 } },
      "claimLoop",
      "pass",
    ],
    [
      "no poll for long, but no room (busy)",
      { lastPoll: { at: now - 600_000, delayMs: 1_000 }, room: 0 },
      "claimLoop",
      "pass",
    ],
    [
      "stopping: no more claims",
      { state: "stopping", lastPoll: { at: now - 600_000, delayMs: 0 } },
      "claimLoop",
      "pass",
    ],
    ["backlog under half", { pendingOutcomes: 999 }, "outcomeBacklog", "pass"],
    ["backlog at half", { pendingOutcomes: 1_000 }, "outcomeBacklog", "warn"],
    ["backlog at the limit", { pendingOutcomes: 2_000 }, "outcomeBacklog", "fail"],
    [
      "coordinator disconnected",
      { coordinator: { transport: "amqp", connected: false } },
      "coordinator",
      "warn",
    ],
    ["no coordinator", { coordinator: { transport: "none", connected: false } }, "coordinator", "pass"],
    ["client: node checks skipped", { state: "client" }, "heartbeat", "skip"],
  ])("%s: %s is %s", (_, patch, check, status) => {
    expect(at(patch).checks[check as keyof ReturnType<typeof at>["checks"]].status).toBe(status);
  });

  it.each<[string, Partial<HealthFacts>, { status: string; ready: boolean; live: boolean }]>([
    [
      "a warning keeps the node ready",
      { pendingOutcomes: 1_500 },
      { status: "warn", ready: true, live: true },
    ],
    ["stopping is not ready", { state: "stopping" }, { status: "pass", ready: false, live: true }],
    [
      "a client is not ready (it runs nothing)",
      { state: "client" },
      { status: "pass", ready: false, live: true },
    ],
    [
      "the database away: not ready, but alive (a restart would not help)",
      {
        database: { ok: false, reason: "x" },
        lastPoll: { at: now - 100_000, delayMs: 0 },
        lastHeartbeatAt: now - 100_000,
      },
      { status: "fail", ready: false, live: true },
    ],
    [
      "the claim loop stuck while the database answers: not live",
      { lastPoll: { at: now - 100_000, delayMs: 0 } },
      { status: "fail", ready: false, live: false },
    ],
  ])("%s", (_, patch, expected) => {
    expect(at(patch)).toMatchObject(expected);
  });

  it("says what it saw in its own words", () => {
    expect(at({ lastHeartbeatAt: now - 20_000 }).checks.heartbeat.detail).toBe(
      "last heartbeat 20000 ms ago (dead after 15000 ms)",
    );
    expect(at({ coordinator: { transport: "amqp", connected: false } }).checks.coordinator.detail).toContain(
      "amqp disconnected",
    );
  });
});

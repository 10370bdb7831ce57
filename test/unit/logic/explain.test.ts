import { describe, expect, it } from "vitest";
import { explainJob, type ExplainReason } from "../../../src/logic/explain.js";
import { describeReason, duration } from "../../../src/logic/explain-text.js";
import type { ExplainFacts, ExplainNode, NodeRegistry } from "../../../src/logic/explain-facts.js";

const now = new Date("2030-01-01T12:00:00.000Z");
const at = (ms: number) => new Date(now.getTime() + ms);

function registry(over: Partial<NodeRegistry> = {}): NodeRegistry {
  return {
    types: [{ type: "mail", queue: null, service: "smtp-api", resource: "smtp", timeoutMs: 30_000 }],
    queues: null,
    concurrency: 4,
    busy: 0,
    breakers: [],
    resources: { smtp: 2 },
    defaultTimeoutMs: 60_000,
    ...over,
  };
}

/** The mail type with a rate limit (`keyed`: by a key function). */
function limitedMail(keyed: boolean): NodeRegistry["types"][number] {
  return {
    type: "mail",
    queue: null,
    service: null,
    resource: null,
    timeoutMs: null,
    rateLimit: { limit: 50, perMs: 1000, keyed },
  };
}

function node(nodeId: string, over: Partial<ExplainNode> = {}): ExplainNode {
  return { nodeId, alive: true, heartbeatAt: at(-1000), ageMs: 1000, registry: registry(), ...over };
}

function facts(
  over: { job?: Partial<ExplainFacts["job"]> } & Partial<Omit<ExplainFacts, "job">> = {},
): ExplainFacts {
  const { job, ...rest } = over;
  return {
    job: {
      id: "7",
      type: "mail",
      queue: "default",
      status: "PENDING",
      scheduledTime: at(-5000),
      attempts: 0,
      maxAttempts: 3,
      timeoutMs: null,
      pickedBy: null,
      pickedAt: null,
      lastError: null,
      cancelReason: null,
      updatedAt: at(-5000),
      finishedAt: null,
      flowId: null,
      waitingFor: null,
      pausedBy: null,
      ...job,
    },
    now,
    nodes: [node("a")],
    pauses: [],
    permits: {},
    dependencies: [],
    deadNodeThresholdMs: 15_000,
    orphanSweepIntervalMs: 2_000,
    ...rest,
  };
}

const openBreaker = (until: number) => [{ service: "smtp-api", state: "OPEN" as const, openUntil: until }];

/** Each row: a name, the facts, the verdict, and the reasons expected (compared as a subset, in order). */
const table: [string, ExplainFacts, string, Partial<ExplainReason>[]][] = [
  ["a due job a live node can take", facts(), "runnable", []],
  [
    "succeeded",
    facts({ job: { status: "SUCCEEDED", finishedAt: at(-10), attempts: 1 } }),
    "finished",
    [{ kind: "finished", outcome: "SUCCEEDED", attempts: 1 }],
  ],
  [
    "dead, with its last error",
    facts({ job: { status: "DEAD", finishedAt: at(-10), attempts: 3, lastError: "boom" } }),
    "finished",
    [{ kind: "finished", outcome: "DEAD", lastError: "boom" }],
  ],
  [
    "canceled, with the reason",
    facts({ job: { status: "CANCELED", cancelReason: "user" } }),
    "finished",
    [{ kind: "finished", outcome: "CANCELED", cancelReason: "user" }],
  ],
  [
    "running on a live node: deadline from the type's timeout",
    facts({ job: { status: "RUNNING", pickedBy: "a", pickedAt: at(-2000) } }),
    "running",
    [{ kind: "running", nodeId: "a", since: at(-2000), heartbeatAgeMs: 1000, deadline: at(28_000) }],
  ],
  [
    "running: the job's own timeout wins",
    facts({ job: { status: "RUNNING", pickedBy: "a", pickedAt: at(-2000), timeoutMs: 5000 } }),
    "running",
    [{ kind: "running", deadline: at(3000) }],
  ],
  [
    "held by a dead node: rescue at heartbeat + threshold + sweep",
    facts({
      job: { status: "RUNNING", pickedBy: "b", pickedAt: at(-60_000) },
      nodes: [node("a"), node("b", { alive: false, heartbeatAt: at(-20_000), ageMs: 20_000 })],
    }),
    "orphaned",
    [{ kind: "orphaned", nodeId: "b", heartbeatAt: at(-20_000), expectedRescueAt: at(-3000) }],
  ],
  [
    "held by a node with no row: from the pick time, by the next full scan (a threshold later at most)",
    facts({ job: { status: "RUNNING", pickedBy: "gone", pickedAt: at(-1000) } }),
    "orphaned",
    [{ kind: "orphaned", nodeId: "gone", heartbeatAt: null, expectedRescueAt: at(31_000) }],
  ],
  [
    "paused by itself",
    facts({ job: { status: "PAUSED", pausedBy: "job", updatedAt: at(-300) } }),
    "blocked",
    [{ kind: "paused", by: "job", name: "7", since: at(-300) }],
  ],
  [
    "paused by its queue, since the pause",
    facts({
      job: { status: "PAUSED", pausedBy: "queue" },
      pauses: [{ kind: "queue", name: "default", pausedAt: at(-9000), pausedBy: "ops" }],
    }),
    "blocked",
    [{ kind: "paused", by: "queue", name: "default", since: at(-9000), pausedBy: "ops" }],
  ],
  [
    "paused by its type",
    facts({
      job: { status: "PAUSED", pausedBy: "type" },
      pauses: [{ kind: "type", name: "mail", pausedAt: at(-1), pausedBy: null }],
    }),
    "blocked",
    [{ kind: "paused", by: "type", name: "mail", since: at(-1) }],
  ],
  [
    "waiting for a signal",
    facts({ job: { status: "WAITING", waitingFor: "signal" } }),
    "blocked",
    [{ kind: "waiting-signal" }],
  ],
  [
    "waiting for flow dependencies, named",
    facts({
      job: { status: "WAITING", waitingFor: "dependencies", flowId: "3" },
      dependencies: [{ id: "5", step: "extract", type: "x", status: "RUNNING" }],
    }),
    "blocked",
    [
      {
        kind: "waiting-dependencies",
        flowId: "3",
        dependencies: [{ id: "5", step: "extract", type: "x", status: "RUNNING" }],
      },
    ],
  ],
  [
    "scheduled in the future",
    facts({ job: { scheduledTime: at(90_000) } }),
    "blocked",
    [{ kind: "scheduled", at: at(90_000), inMs: 90_000 }],
  ],
  [
    "no live node registers the type",
    facts({ nodes: [node("a", { registry: registry({ types: [] }) }), node("b", { alive: false })] }),
    "blocked",
    [
      {
        kind: "no-node",
        type: "mail",
        typeWithoutQueue: [],
        alive: [{ nodeId: "a", types: [], queues: null }],
      },
    ],
  ],
  ["no node at all", facts({ nodes: [] }), "blocked", [{ kind: "no-node", alive: [] }]],
  [
    "the type is registered, but only on a node without the queue",
    facts({
      nodes: [node("a", { registry: registry({ queues: [{ name: "other", limit: 2, running: 0 }] }) })],
    }),
    "blocked",
    [{ kind: "no-node", typeWithoutQueue: ["a"] }],
  ],
  [
    "queue full on every node that serves it",
    facts({
      nodes: [
        node("a", { registry: registry({ queues: [{ name: "default", limit: 2, running: 2 }] }) }),
        node("b", { registry: registry({ busy: 4 }) }),
      ],
    }),
    "blocked",
    [
      {
        kind: "queue-full",
        queue: "default",
        nodes: [
          { nodeId: "a", running: 2, limit: 2 },
          { nodeId: "b", running: 4, limit: 4 },
        ],
      },
    ],
  ],
  [
    "one node with room: not full",
    facts({ nodes: [node("a", { registry: registry({ busy: 4 }) }), node("b")] }),
    "runnable",
    [],
  ],
  [
    "breaker open on every node: the earliest probe",
    facts({
      nodes: [
        node("a", { registry: registry({ breakers: openBreaker(at(20_000).getTime()) }) }),
        node("b", { registry: registry({ breakers: openBreaker(at(10_000).getTime()) }) }),
      ],
    }),
    "blocked",
    [{ kind: "breaker-open", service: "smtp-api", until: at(10_000) }],
  ],
  [
    "breaker open on one node only",
    facts({
      nodes: [node("a", { registry: registry({ breakers: openBreaker(at(20_000).getTime()) }) }), node("b")],
    }),
    "runnable",
    [],
  ],
  [
    "breaker whose open window has passed",
    facts({ nodes: [node("a", { registry: registry({ breakers: openBreaker(at(-1).getTime()) }) })] }),
    "runnable",
    [],
  ],
  [
    "every permit held, by named jobs",
    facts({
      permits: {
        smtp: {
          held: 2,
          holders: [
            { jobId: "1", nodeId: "a", acquiredAt: at(-10) },
            { jobId: "2", nodeId: "a", acquiredAt: at(-5) },
          ],
        },
      },
    }),
    "blocked",
    [{ kind: "permits-exhausted", resource: "smtp", capacity: 2, held: 2 }],
  ],
  [
    "permits left",
    facts({ permits: { smtp: { held: 1, holders: [{ jobId: "1", nodeId: "a", acquiredAt: at(-10) }] } } }),
    "runnable",
    [],
  ],
  [
    "a resource without capacity is unlimited",
    facts({
      nodes: [node("a", { registry: registry({ resources: {} }) })],
      permits: { smtp: { held: 50, holders: [] } },
    }),
    "runnable",
    [],
  ],
  [
    "its type's rate limit window is full: rate limited until the opening",
    facts({
      nodes: [node("a", { registry: registry({ types: [limitedMail(false)] }) })],
      rateWindows: [{ key: "type:mail", limit: 50, perMs: 1000, used: 50, openAt: at(300) }],
    }),
    "blocked",
    [{ kind: "rate-limited", key: "type:mail", limit: 50, used: 50, until: at(300) }],
  ],
  [
    "its queue's rate limit window is full",
    facts({
      nodes: [
        node("a", { registry: registry({ queueRateLimits: { default: { limit: 5, perMs: 60_000 } } }) }),
      ],
      rateWindows: [{ key: "queue:default", limit: 5, perMs: 60_000, used: 5, openAt: at(20_000) }],
    }),
    "blocked",
    [{ kind: "rate-limited", key: "queue:default", until: at(20_000) }],
  ],
  [
    "a rate limit window with room",
    facts({
      nodes: [node("a", { registry: registry({ types: [limitedMail(false)] }) })],
      rateWindows: [{ key: "type:mail", limit: 50, perMs: 1000, used: 49, openAt: null }],
    }),
    "runnable",
    [],
  ],
  [
    "a full window whose opening has passed",
    facts({
      nodes: [node("a", { registry: registry({ types: [limitedMail(false)] }) })],
      rateWindows: [{ key: "type:mail", limit: 50, perMs: 1000, used: 50, openAt: at(0) }],
    }),
    "runnable",
    [],
  ],
  [
    "a full window of a limit no live node applies any more",
    facts({ rateWindows: [{ key: "type:mail", limit: 50, perMs: 1000, used: 50, openAt: at(300) }] }),
    "runnable",
    [],
  ],
  [
    "a limit keyed by the payload: explain cannot tell the key, so it says nothing",
    facts({
      nodes: [node("a", { registry: registry({ types: [limitedMail(true)] }) })],
      rateWindows: [{ key: "type:mail", limit: 50, perMs: 1000, used: 50, openAt: at(300) }],
    }),
    "runnable",
    [],
  ],
  [
    "a live node that publishes nothing: no claim about nodes",
    facts({ nodes: [node("old", { registry: null })], job: { scheduledTime: at(1000) } }),
    "blocked",
    [{ kind: "scheduled" }],
  ],
  [
    "every reason that holds, in order",
    facts({
      job: { status: "PAUSED", pausedBy: "queue", scheduledTime: at(60_000) },
      pauses: [{ kind: "queue", name: "default", pausedAt: at(-1), pausedBy: null }],
      nodes: [
        node("a", {
          registry: registry({ busy: 4, breakers: openBreaker(at(5000).getTime()) }),
        }),
      ],
      permits: { smtp: { held: 2, holders: [] } },
    }),
    "blocked",
    [
      { kind: "paused" },
      { kind: "scheduled" },
      { kind: "queue-full" },
      { kind: "breaker-open" },
      { kind: "permits-exhausted" },
    ],
  ],
];

describe("explainJob", () => {
  it.each(table)("%s", (_name, f, verdict, reasons) => {
    const e = explainJob(f);
    expect(e.verdict).toBe(verdict);
    expect(e.jobId).toBe("7");
    expect(e.at).toBe(now);
    expect(e.reasons).toHaveLength(reasons.length);
    reasons.forEach((r, i) => expect(e.reasons[i]).toMatchObject(r));
  });

  it("covers every kind of reason in the table", () => {
    const kinds = new Set(table.flatMap(([, f]) => explainJob(f).reasons.map((r) => r.kind)));
    expect([...kinds].sort()).toEqual(
      [
        "breaker-open",
        "finished",
        "no-node",
        "orphaned",
        "paused",
        "permits-exhausted",
        "queue-full",
        "rate-limited",
        "running",
        "scheduled",
        "waiting-dependencies",
        "waiting-signal",
      ].sort(),
    );
  });
});

describe("describeReason", () => {
  it.each(table.filter(([, , , r]) => r.length > 0))("names the facts: %s", (_name, f) => {
    for (const r of explainJob(f).reasons) {
      const line = describeReason(r, now);
      expect(line.length).toBeGreaterThan(10);
      if (r.kind === "paused" && r.by !== "job") expect(line).toContain(`its ${r.by} "${r.name}" is paused`);
      if (r.kind === "running" || r.kind === "orphaned") expect(line).toContain(r.nodeId);
      if (r.kind === "breaker-open") expect(line).toContain(r.service);
      if (r.kind === "finished" && r.lastError) expect(line).toContain(r.lastError);
    }
  });

  it.each([
    [850, "850ms"],
    [12_400, "12s"],
    [90_000, "1m 30s"],
    [7_500_000, "2h 5m"],
    [273_600_000, "3d 4h"],
    [-2000, "-2s"],
  ])("duration(%d) = %s", (ms, text) => expect(duration(ms)).toBe(text));
});

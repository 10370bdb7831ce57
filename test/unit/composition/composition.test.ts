import { describe, expect, it } from "vitest";
import { ValidationError } from "../../../src/core/errors.js";
import {
  findCycle,
  planBatch,
  planChain,
  planWorkflow,
  type FlowBuildContext,
} from "../../../src/composition/flow-input.js";
import { JobComposition, deliveryOf, flowOf, waitTimeout } from "../../../src/composition/job-composition.js";
import { WaitForSignal } from "../../../src/composition/errors.js";
import { resolveQueueLimits } from "../../../src/input/queue-config.js";
import type { JobCompositionRow } from "../../../src/store/composition/flow-sql.js";
import type { JobContextServices } from "../../../src/composition/signals.js";
import { JobContext } from "../../../src/node/attempt/job-context.js";
import { finishAttempt, settlementOf } from "../../../src/node/attempt/finish-attempt.js";
import type { JobRun } from "../../../src/node/attempt/job-run.js";
import type { OutcomeSink } from "../../../src/store/outcomes/outcome-sink.js";
import type { Park } from "../../../src/store/composition/signal-sql.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { silentLogger } from "../../../src/core/logger.js";

const ctx: FlowBuildContext = { typeDefaults: () => undefined, maxPayloadBytes: 1024 };

function flowError(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError");
}

describe("findCycle", () => {
  it.each([
    { deps: [], cycle: null },
    { deps: [[]], cycle: null },
    { deps: [[], [0], [0], [1, 2]], cycle: null },
    { deps: [[0]], cycle: [0, 0] },
    { deps: [[1], [0]], cycle: [0, 1, 0] },
    { deps: [[], [3], [1], [2]], cycle: [1, 3, 2, 1] },
  ])("$deps -> $cycle", ({ deps, cycle }) => {
    expect(findCycle(deps)).toEqual(cycle);
  });

  it("handles a 10,000-long chain without deep recursion", () => {
    const deps = Array.from({ length: 10_000 }, (_, i) => (i === 0 ? [] : [i - 1]));
    expect(findCycle(deps)).toBeNull();
    deps[0] = [9_999];
    expect(findCycle(deps)).toHaveLength(10_001);
  });
});

describe("planWorkflow", () => {
  it("names each dependency's index and its dependents", () => {
    const plan = planWorkflow(
      {
        jobs: [
          { name: "d", type: "t", dependsOn: ["b", "c"] },
          { name: "b", type: "t", dependsOn: ["a"] },
          { name: "c", type: "t", dependsOn: ["a"], priority: "high" },
          { name: "a", type: "t", payload: { x: 1 } },
        ],
      },
      ctx,
    );
    expect(plan.members.map((m) => [m.step, m.dependsOn])).toEqual([
      ["d", [1, 2]],
      ["b", [3]],
      ["c", [3]],
      ["a", []],
    ]);
    expect(plan.dependents).toEqual([[], [0], [0], [1, 2]]);
    expect(plan.policy).toBe("stop");
    expect(plan.members[2]?.job.priority).toBe(20);
    expect(plan.members[3]?.job.payloadJson).toBe('{"x":1}');
  });

  it.each([
    [{ jobs: [] }, "a workflow needs a jobs array of at least one job"],
    [{ jobs: [{ type: "t" }] }, "workflow job 0 needs a name"],
    [
      {
        jobs: [
          { name: "a", type: "t" },
          { name: "a", type: "t" },
        ],
      },
      'workflow job name "a" is used twice',
    ],
    [
      { jobs: [{ name: "a", type: "t", dependsOn: ["b"] }] },
      'workflow job "a" depends on "b", which is not a job of this workflow',
    ],
    [
      { jobs: [{ name: "a", type: "t", dependsOn: "b" }] },
      'workflow job "a": dependsOn must be an array of job names',
    ],
    [
      {
        jobs: [
          { name: "a", type: "t" },
          { name: "b", type: "t", dependsOn: ["a", "a"] },
        ],
      },
      'workflow job "b" lists "a" twice in dependsOn',
    ],
    [
      {
        jobs: [
          { name: "x", type: "t", dependsOn: ["z"] },
          { name: "y", type: "t", dependsOn: ["x"] },
          { name: "z", type: "t", dependsOn: ["y"] },
        ],
      },
      "workflow has a dependency cycle: x -> z -> y -> x",
    ],
    [
      { jobs: [{ name: "a", type: "t" }], failurePolicy: "maybe" },
      'invalid failurePolicy "maybe": use stop-dependents or continue',
    ],
    [
      { jobs: [{ name: "a", type: "t", uniqueKey: "k" }] },
      'workflow job "a": uniqueKey is not supported on flow members',
    ],
  ])("rejects %j", (input, message) => {
    const e = flowError(() => planWorkflow(input, ctx));
    expect(e.code).toBe("INVALID_FLOW");
    expect(e.message).toBe(message);
  });

  it("prefixes an enqueue error with the job's name", () => {
    const e = flowError(() => planWorkflow({ jobs: [{ name: "a", type: "t", priority: 999 }] }, ctx));
    expect(e.code).toBe("INVALID_PRIORITY");
    expect(e.message).toMatch(/^workflow job "a": invalid priority 999/);
  });
});

describe("planChain", () => {
  it("links each step to the previous one and names steps by index unless named", () => {
    const plan = planChain(
      [{ type: "a" }, { type: "b", name: "second" }, { type: "c" }],
      { name: "c1" },
      ctx,
    );
    expect(plan.members.map((m) => [m.step, m.dependsOn])).toEqual([
      ["0", []],
      ["second", [0]],
      ["2", [1]],
    ]);
    expect(plan.dependents).toEqual([[1], [2], []]);
    expect(plan).toMatchObject({ kind: "chain", name: "c1", policy: "stop", completion: null });
  });

  it("validates steps and the completion job", () => {
    expect(flowError(() => planChain([], undefined, ctx)).message).toBe(
      "a chain needs an array of at least one step",
    );
    expect(flowError(() => planChain([{ type: "" }], undefined, ctx)).message).toMatch(
      /^chain step 0: invalid job type/,
    );
    expect(
      flowError(() => planChain([{ type: "a" }], { onComplete: { type: "d", bogus: 1 } as never }, ctx)).code,
    ).toBe("UNKNOWN_OPTION");
  });
});

describe("planBatch", () => {
  it("shares the type and options and serialises each item", () => {
    const plan = planBatch(
      { type: "row", items: [{ a: 1 }, [2], "three"], priority: "low", queue: "imports" },
      ctx,
    );
    expect(plan.payloads).toEqual(['{"a":1}', "[2]", '"three"']);
    expect(plan.shared).toMatchObject({ type: "row", queue: "imports", priority: 0 });
  });

  it("runs the type's validator on every item, naming the item", () => {
    const validating: FlowBuildContext = {
      typeDefaults: () => ({ validate: (p) => (typeof p === "number" ? undefined : "not a number") }),
      maxPayloadBytes: 1024,
    };
    const e = flowError(() => planBatch({ type: "row", items: [1, 2, "x"] }, validating));
    expect(e.message).toBe("batch item 2: payload rejected by the validator of row: not a number");
  });

  it("checks the payload limit per item", () => {
    const e = flowError(() => planBatch({ type: "row", items: [1, "x".repeat(2000)] }, ctx));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
  });
});

const row = (r: Partial<JobCompositionRow>): JobCompositionRow => ({
  flow_id: null,
  flow_step: null,
  flow_inputs: null,
  kind: null,
  signal_state: null,
  signal_payload: null,
  signaled_at: null,
  ...r,
});

describe("the job's composition view", () => {
  const at = new Date("2026-01-01T00:00:00Z");

  it("maps deliveries", () => {
    expect(deliveryOf(null)).toBeNull();
    expect(deliveryOf(row({ signal_state: "waiting" }))).toBeNull();
    expect(
      deliveryOf(row({ signal_state: "delivered", signal_payload: { ok: 1 }, signaled_at: at })),
    ).toEqual({
      timedOut: false,
      payload: { ok: 1 },
      at,
    });
    expect(deliveryOf(row({ signal_state: "timeout", signaled_at: at }))).toEqual({ timedOut: true, at });
  });

  it("maps the flow view, with a chain's previous result", () => {
    expect(flowOf(row({}))).toBeNull();
    const inputs = { "0": { status: "SUCCEEDED", result: { n: 1 } } };
    expect(flowOf(row({ flow_id: "7", flow_step: "1", kind: "chain", flow_inputs: inputs }))).toEqual({
      flowId: "7",
      kind: "chain",
      step: "1",
      results: { "0": { n: 1 } },
      failed: {},
      previous: { n: 1 },
    });
    const mixed = { a: { status: "SUCCEEDED", result: null }, b: { status: "DEAD" } };
    expect(flowOf(row({ flow_id: "7", flow_step: "c", kind: "workflow", flow_inputs: mixed }))).toMatchObject(
      {
        results: { a: null },
        failed: { b: "DEAD" },
        previous: undefined,
      },
    );
  });

  it.each([
    [{}, null],
    [{ timeoutMs: 1500 }, 1500],
    [{ timeoutMs: 0.6e3 }, 600],
  ])("waitTimeout(%j) = %j", (o, ms) => {
    expect(waitTimeout(o)).toBe(ms);
  });

  it.each([0, -1, Number.NaN, "5" as unknown as number])("rejects timeoutMs %j", (t) => {
    expect(() => waitTimeout({ timeoutMs: t })).toThrowError(ValidationError);
  });

  it("returns a delivered signal to the first wait of an attempt only, reading the row once", async () => {
    let reads = 0;
    const services: JobContextServices = {
      read: async () => {
        reads++;
        return row({ signal_state: "delivered", signal_payload: "yes", signaled_at: at });
      },
      park: () => {},
    };
    const c = new JobComposition("1", services);
    expect(await c.receivedSignal()).toEqual({ timedOut: false, payload: "yes", at });
    expect(await c.waitForSignal()).toEqual({ timedOut: false, payload: "yes", at });
    const second = await c.waitForSignal({ timeoutMs: 10 }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(WaitForSignal);
    expect((second as WaitForSignal).timeoutMs).toBe(10);
    expect(reads).toBe(1);
  });

  it("parks at once when nothing was delivered, and without services", async () => {
    const none = new JobComposition("1", undefined);
    await expect(none.waitForSignal()).rejects.toBeInstanceOf(WaitForSignal);
    expect(await none.flow()).toBeNull();
  });
});

describe("resolveQueueLimits", () => {
  it("sums the limits into the node's concurrency", () => {
    expect(resolveQueueLimits(undefined, 5)).toBeNull();
    const r = resolveQueueLimits({ default: 10, mail: 5 }, undefined);
    expect(r?.concurrency).toBe(15);
    expect([...(r?.limits ?? [])]).toEqual([
      ["default", 10],
      ["mail", 5],
    ]);
    expect(resolveQueueLimits({ a: 1 }, 1)?.concurrency).toBe(1);
  });

  it.each([
    [[], undefined, "queues must be an object"],
    [{}, undefined, "queues needs at least one queue"],
    [{ a: 1.5 }, undefined, "queues.a must be an integer from 1 to 10000, got 1.5"],
    [{ a: 6000, b: 6000 }, undefined, "queues add up to 12000 slots; the most is 10000"],
    [{ a: 1, b: 1 }, 3, "concurrency 3 does not match queues, which add up to 2"],
  ])("rejects %j (concurrency %j)", (queues, concurrency, message) => {
    const e = flowError(() => resolveQueueLimits(queues, concurrency));
    expect(e.code).toBe("INVALID_CONFIG");
    expect(e.message).toContain(message);
  });
});

describe("the wait outcome", () => {
  const info = { id: "9", type: "t", queue: "default", priority: 10, attempt: 1, maxAttempts: 3 };
  const runWith = (services: JobContextServices | undefined) => {
    const ctx = new JobContext("9", "t", 1, 3, Date.now() + 1000, silentLogger, "n", services);
    return {
      claimed: { attempt: 1, maxAttempts: 3, scheduledAtMs: 1234 },
      type: { retry: {} },
      info,
      ctx,
      startedAt: 0,
    } as unknown as JobRun;
  };
  const sink = () => {
    const writes: string[] = [];
    const writer: OutcomeSink = {
      complete: () => writes.push("complete"),
      retry: () => writes.push("retry"),
      kill: (item, done) => {
        writes.push(`kill:${item.error.name}`);
        done(true);
      },
      reschedule: () => writes.push("reschedule"),
    };
    return { writes, writer };
  };

  it("maps WaitForSignal to a wait outcome", () => {
    const ctx = new JobContext("9", "t", 1, 3, 0, silentLogger, "n");
    expect(settlementOf(new WaitForSignal(250), ctx)).toEqual({ kind: "wait", timeoutMs: 250 });
    expect(settlementOf(new WaitForSignal(null), ctx)).toEqual({ kind: "wait", timeoutMs: null });
  });

  it("parks through the context's services and reports job:waiting", () => {
    const parked: Park[] = [];
    const services: JobContextServices = {
      read: async () => null,
      park: (item, done) => {
        parked.push(item);
        done(true);
      },
    };
    const events = new PawlEventEmitter();
    const seen: unknown[] = [];
    events.on("job:waiting", (e) => seen.push(e));
    const { writes, writer } = sink();
    finishAttempt(
      runWith(services),
      { kind: "wait", timeoutMs: 500 },
      {
        writer,
        events,
        random: () => 0,
        now: () => 0,
        breakerResult: () => {},
      },
    );
    // The park names the lease, so its fallback hand-back cannot undo a park that landed.
    expect(parked).toEqual([{ id: "9", timeoutMs: 500, lease: { attempt: 1, scheduledAtMs: 1234 } }]);
    expect(writes).toEqual([]);
    expect(seen).toEqual([{ job: info, timeoutMs: 500 }]);
  });

  it("fails for good where no store can park the job (pawl/testing)", () => {
    const { writes, writer } = sink();
    finishAttempt(
      runWith(undefined),
      { kind: "wait", timeoutMs: null },
      {
        writer,
        events: new PawlEventEmitter(),
        random: () => 0,
        now: () => 0,
        breakerResult: () => {},
      },
    );
    expect(writes).toEqual(["kill:NonRetryableError"]);
  });
});

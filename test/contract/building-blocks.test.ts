/**
 * The pure pieces the transports share, tested exactly (no server, no real time): the hint codec, the
 * coalescer driven by a ManualClock, spec parsing, the backoff schedule, the `none` coordinator, and the
 * promise that choosing one transport loads no other transport's client library.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import {
  backoffDelay,
  createCoordinator,
  decodeHint,
  encodeHint,
  HintCoalescer,
  isCoordinator,
  MAX_ENCODED_HINT_BYTES,
  mergeHints,
  NoneCoordinator,
  parseCoordinatorSpec,
  type WakeupHint,
} from "../../coordinators/index.js";
import { ManualClock } from "../../src/core/clock.js";
import { PawlError } from "../../src/core/errors.js";

describe("hint codec", () => {
  it("round-trips work and cancel hints", () => {
    const work: WakeupHint = { priority: 70, source: "node-a", target: "email" };
    const cancel: WakeupHint = { kind: "cancel", jobId: "42", priority: 0, source: "node-a" };
    expect(decodeHint(encodeHint(work))).toEqual({ ...work, kind: "work" });
    expect(decodeHint(Buffer.from(encodeHint(cancel)!))).toEqual(cancel);
  });

  it("carries `released` on work hints only, and reads anything but true as absent", () => {
    const released: WakeupHint = { priority: 10, source: "node-a", target: "report", released: true };
    expect(decodeHint(encodeHint(released))).toEqual({ ...released, kind: "work" });
    expect(
      encodeHint({ kind: "cancel", jobId: "7", priority: 0, source: "a", released: true }),
    ).not.toContain("released");
    expect(decodeHint('{"pawl":1,"kind":"work","priority":1,"source":"a","released":"yes"}')).toEqual({
      kind: "work",
      priority: 1,
      source: "a",
    });
    // A coalesced window that held a released job stays released.
    expect(mergeHints({ priority: 1, source: "a" }, { priority: 0, source: "a", released: true })).toEqual({
      priority: 1,
      source: "a",
      released: true,
    });
  });

  it("carries `unkeyed` on work hints only, and keeps it through a merge only when both say it", () => {
    const unkeyed: WakeupHint = { priority: 30, source: "node-a", unkeyed: true };
    expect(decodeHint(encodeHint(unkeyed))).toEqual({ ...unkeyed, kind: "work" });
    expect(encodeHint({ kind: "cancel", jobId: "7", priority: 0, source: "a", unkeyed: true })).not.toContain(
      "unkeyed",
    );
    // An older node's hint, and a value that is not true: may carry keys.
    expect(decodeHint('{"pawl":1,"kind":"work","priority":1,"source":"a"}')?.unkeyed).toBeUndefined();
    expect(
      decodeHint('{"pawl":1,"kind":"work","priority":1,"source":"a","unkeyed":1}')?.unkeyed,
    ).toBeUndefined();
    expect(mergeHints(unkeyed, { priority: 0, source: "a", unkeyed: true }).unkeyed).toBe(true);
    expect(mergeHints(unkeyed, { priority: 0, source: "a" }).unkeyed).toBeUndefined();
    expect(mergeHints({ priority: 0, source: "a" }, unkeyed).unkeyed).toBeUndefined();
  });

  it.each([
    ["not JSON", "nope"],
    ["an array", "[1,2]"],
    ["no marker", '{"kind":"work","priority":1,"source":"a"}'],
    ["another version", '{"pawl":2,"kind":"work","priority":1,"source":"a"}'],
    ["a string priority", '{"pawl":1,"kind":"work","priority":"1","source":"a"}'],
    ["an empty source", '{"pawl":1,"kind":"work","priority":1,"source":""}'],
    ["a cancel without job id", '{"pawl":1,"kind":"cancel","priority":1,"source":"a"}'],
    ["an unknown kind", '{"pawl":1,"kind":"pause","priority":1,"source":"a"}'],
    ["a number", 42],
    ["undefined", undefined],
  ])("decodes %s to null", (_label, raw) => {
    expect(decodeHint(raw)).toBeNull();
  });

  it("drops the target rather than the hint when the encoding is too large, and refuses what still is", () => {
    // Control characters encode as six bytes each in JSON: 1,000 of them make a 6,000-byte field.
    const heavy = "\u0001".repeat(1_000);
    const hint = { priority: 1, source: heavy, target: heavy };
    expect(decodeHint(encodeHint(hint))).toEqual({ priority: 1, source: heavy, kind: "work" });
    expect(encodeHint({ kind: "cancel", jobId: heavy, priority: 1, source: heavy })).toBeNull();
    expect(encodeHint({ priority: 1, source: "a", target: "t".repeat(1_001) })).toBeNull(); // field limit
    expect(MAX_ENCODED_HINT_BYTES).toBeLessThan(8_000);
  });
});

describe("HintCoalescer", () => {
  function setup(windowMs = 5) {
    const clock = new ManualClock(0);
    const sent: WakeupHint[] = [];
    const coalescer = new HintCoalescer({ windowMs, clock, send: (hint) => sent.push(hint) });
    return { clock, sent, coalescer };
  }

  it("sends the first hint at once and merges the rest of the window into one", () => {
    const { clock, sent, coalescer } = setup();
    let merged = 0;
    for (let i = 0; i < 10_000; i++) {
      if (coalescer.push({ priority: i % 100, source: "a", target: i % 2 ? "odd" : "even" })) merged++;
    }
    expect(sent).toEqual([{ priority: 0, source: "a", target: "even" }]);
    clock.advance(5);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual({ priority: 99, source: "a" });
    expect(merged).toBe(9_998);
    clock.advance(100);
    expect(sent).toHaveLength(2);
  });

  it("caps a steady stream at one message per window", () => {
    const { clock, sent, coalescer } = setup(5);
    for (let ms = 0; ms < 100; ms++) {
      coalescer.push({ priority: 1, source: "a", target: "x" });
      clock.advance(1);
    }
    clock.advance(10);
    expect(sent.length).toBeLessThanOrEqual(21);
    expect(sent.every((hint) => hint.target === "x")).toBe(true);
  });

  it("sends everything at once with a zero window, and nothing after close", () => {
    const { clock, sent, coalescer } = setup(0);
    coalescer.push({ priority: 1, source: "a" });
    coalescer.push({ priority: 2, source: "a" });
    expect(sent).toHaveLength(2);
    coalescer.close();
    coalescer.push({ priority: 3, source: "a" });
    clock.advance(10);
    expect(sent).toHaveLength(2);
  });
});

describe("parseCoordinatorSpec", () => {
  it.each([
    [undefined, { transport: "none" }],
    ["", { transport: "none" }],
    ["None", { transport: "none" }],
    ["auto", { transport: "auto" }],
    [" Auto ", { transport: "auto" }],
    ["in-memory", { transport: "in-memory", bus: "default" }],
    ["in-memory://cluster-1", { transport: "in-memory", bus: "cluster-1" }],
    ["postgres", { transport: "postgres" }],
    ["postgres://u@db:5432/jobs", { transport: "postgres", connectionString: "postgres://u@db:5432/jobs" }],
    [
      "amqp://g:g@mq:5672/vh?exchange=x.y",
      { transport: "amqp", url: "amqp://g:g@mq:5672/vh", exchange: "x.y" },
    ],
    [
      "hazelcast://h1:5701,h2?cluster=c",
      { transport: "hazelcast", members: ["h1:5701", "h2:5701"], clusterName: "c" },
    ],
  ])("parses %j", (spec, expected) => {
    expect(parseCoordinatorSpec(spec)).toEqual(expected);
  });

  it.each([
    ["redis://localhost", /unknown coordinator "redis/],
    ["auto://somewhere", /unknown coordinator "auto:\/\/somewhere": expected auto, none/],
    ["amqp", /needs a URL/],
    ["amqp://", /malformed|no host/],
    ["amqp://h?exchange=amq.direct", /exchange/],
    ["hazelcast://h:5701", /cluster/],
    ["hazelcast://h:70000?cluster=c", /not host:port/],
    ["hazelcast://h?cluster=c&topik=t", /unknown parameter "topik"/],
    ["in-memory://has space", /bus name/],
    ["postgres://[", /malformed/],
  ])("rejects %j with INVALID_COORDINATOR", (spec, message) => {
    let error: unknown;
    try {
      parseCoordinatorSpec(spec);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PawlError);
    expect(error).toMatchObject({ code: "INVALID_COORDINATOR", message: expect.stringMatching(message) });
  });

  it("never echoes a password", () => {
    expect(() => parseCoordinatorSpec("redis://user:hunter2@host")).toThrow(/user:\*\*\*@host/);
  });
});

describe("createCoordinator", () => {
  const options = { nodeId: "n", connectionString: "postgres://localhost/db", schema: "pawl" };

  it("returns a Coordinator instance as is, and refuses an object that is not one", async () => {
    const mine = new NoneCoordinator();
    expect(await createCoordinator(mine, options)).toBe(mine);
    await expect(createCoordinator({} as never, options)).rejects.toMatchObject({
      code: "INVALID_COORDINATOR",
    });
  });

  it("defaults to none, which never connects and ignores everything", async () => {
    const none = await createCoordinator(undefined, options);
    expect(isCoordinator(none)).toBe(true);
    await none.start();
    none.notifyNewWork({ priority: 1, source: "n" });
    expect(none.status()).toMatchObject({ transport: "none", connected: false, published: 0 });
    await none.close();
  });

  it("makes auto the postgres coordinator on the schema's channel when pg-listen is installed", async () => {
    const auto = await createCoordinator("auto", { ...options, schema: "jobs" });
    expect(auto.status()).toMatchObject({ transport: "postgres", connected: false });
    expect(
      (auto as unknown as { config: { channel: string; connectionString: string } }).config,
    ).toMatchObject({
      channel: "pawl_jobs_wakeup",
      connectionString: "postgres://localhost/db",
    });
    await auto.close();
  });

  it("validates shared options when constructing", async () => {
    await expect(createCoordinator("in-memory", { ...options, coalesceMs: -1 })).rejects.toThrow(
      /coalesceMs/,
    );
    await expect(createCoordinator("in-memory", { ...options, nodeId: "" })).rejects.toThrow(/nodeId/);
  });

  it("loads a transport's client library only when that transport is chosen", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/lazy-load.ts", import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", fixture], {
      timeout: 20_000,
    });
    expect(JSON.parse(stdout)).toEqual({ afterEntry: [], afterPostgres: ["pg-listen"] });
  });
});

describe("backoffDelay", () => {
  it("doubles from the initial delay up to the cap", () => {
    const reconnect = { initialDelayMs: 200, maxDelayMs: 1_000 };
    expect([1, 2, 3, 4, 5, 50].map((attempt) => backoffDelay(attempt, reconnect))).toEqual([
      200, 400, 800, 1_000, 1_000, 1_000,
    ]);
  });
});

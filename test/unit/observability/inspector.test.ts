/**
 * The inspector without a database: safe serialisation, the HTTP handler (token, routing, the SSE
 * stream's filters and its subscribe-only-while-listened lifecycle) over a real xstate actor system, and
 * the pieces of `pawl inspect` (URL resolution, tree rendering, the SSE parser).
 */
import { tokenCheck } from "../../../observability/access.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { assign, createActor, setup, type AnyActorRef } from "xstate";
import { type ActorTree } from "../../../src/index.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { inspectorUrls, readSse, renderActors, renderEvent } from "../../../src/cli/commands/inspect.js";
import {
  createInspector,
  sanitize,
  serializeInspectionEvent,
  type ActorsView,
  type Inspector,
  type InspectorNode,
} from "../../../observability/index.js";

describe("sanitize", () => {
  it("drops functions, breaks cycles, redacts payloads and bounds size", () => {
    const a: Record<string, unknown> = {
      n: 1,
      inf: Infinity,
      big: 10n,
      fn: () => 1,
      sym: Symbol("s"),
      und: undefined,
      payload: { card: "4111" },
      result: "secret",
      nothing: null,
      when: new Date("2030-01-01T00:00:00Z"),
      error: new TypeError("bad"),
      set: new Set([1, 2]),
      map: new Map([["k", { payload: 1 }]]),
      long: "x".repeat(600),
      list: Array.from({ length: 60 }, (_, i) => i),
      deep: { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } },
    };
    a.self = a;
    const shared = { s: 1 };
    a.twice = [shared, shared];
    const out = sanitize(a) as Record<string, unknown>;
    expect(out).toMatchObject({
      n: 1,
      inf: "Infinity",
      big: "10",
      payload: "[redacted]",
      result: "[redacted]",
      nothing: null,
      when: "2030-01-01T00:00:00.000Z",
      error: { name: "TypeError", message: "bad" },
      set: [1, 2],
      map: { k: { payload: "[redacted]" } },
      self: "[Circular]",
      twice: [{ s: 1 }, { s: 1 }],
    });
    expect(Object.keys(out)).not.toContain("fn");
    expect(Object.keys(out)).not.toContain("sym");
    expect(Object.keys(out)).not.toContain("und");
    expect((out.long as string).length).toBe(503);
    expect((out.list as unknown[]).at(-1)).toBe("... 10 more");
    expect(JSON.stringify(out.deep)).toContain('"[Object]"');
    expect(() => JSON.stringify(out)).not.toThrow();
    expect(sanitize({ payload: { card: "4111" } }, { includePayloads: true })).toEqual({
      payload: { card: "4111" },
    });
  });

  it("removes connection URLs' passwords from every string it passes on", () => {
    const out = sanitize({
      error: { message: "connect postgres://u:p@ss/w@db/x failed" },
      list: ["amqp://g:pw@mq"],
    });
    expect(out).toEqual({
      error: { message: "connect postgres://u:***@db/x failed" },
      list: ["amqp://g:***@mq"],
    });
  });

  it("shows actor references by id, and serialises inspection events of a real actor", () => {
    const child = setup({}).createMachine({ initial: "a", states: { a: {} } });
    const parent = setup({ actors: { child } }).createMachine({
      context: { n: 0, payload: { secret: true }, now: () => 1 },
      invoke: { src: "child", id: "kid", systemId: "kid" },
      initial: "idle",
      states: {
        idle: { on: { GO: { target: "busy", actions: assign({ n: ({ context }) => context.n + 1 }) } } },
        busy: {},
      },
    });
    const seen: ReturnType<typeof serializeInspectionEvent>[] = [];
    const actor = createActor(parent, {
      systemId: "root",
      inspect: (e) => seen.push(serializeInspectionEvent(e)),
    });
    actor.start();
    actor.send({ type: "GO", payload: { card: "4111" } } as never);
    const ev = seen.find((e) => e.type === "@xstate.event" && (e.event as { type: string }).type === "GO");
    expect(ev).toMatchObject({ actor: "root", event: { type: "GO", payload: "[redacted]" } });
    const snap = seen.filter((e) => e.type === "@xstate.snapshot" && e.actor === "root").at(-1);
    expect(snap?.snapshot).toEqual({
      value: "busy",
      status: "active",
      context: { n: 1, payload: "[redacted]" },
    });
    expect(seen.some((e) => e.type === "@xstate.actor" && e.actor === "kid")).toBe(true);
    expect(sanitize({ ref: actor.system.get("kid") as AnyActorRef })).toEqual({ ref: { actor: "kid" } });
    actor.stop();
  });
});

/** A node with a real actor system behind it (a two-state "slot" and a "poller"). */
function fakeNode() {
  const slot = setup({}).createMachine({
    initial: "idle",
    states: { idle: { on: { START: "running" } }, running: { on: { DONE: "idle" } } },
  });
  const poller = setup({}).createMachine({
    initial: "waiting",
    states: { waiting: { on: { POLL: "waiting" } } },
  });
  const root = createActor(
    setup({ actors: { slot, poller } }).createMachine({
      invoke: [
        { src: "slot", id: "slot-0", systemId: "slot-0" },
        { src: "poller", id: "poller", systemId: "poller" },
      ],
    }),
    { systemId: "node" },
  ).start();
  const inspect = vi.spyOn(root.system, "inspect");
  const events = new PawlEventEmitter();
  const tree: ActorTree = {
    id: "node",
    machine: "node",
    nodeId: "n1",
    state: "running",
    status: "active",
    context: { busy: 1, free: 1 },
    buffered: 0,
    pendingOutcomes: 0,
    coordinator: { transport: "none", connected: false },
    children: [
      {
        id: "slot-0",
        machine: "jobTask",
        state: "running",
        status: "active",
        context: {
          slot: 0,
          job: { id: "42", type: "long", attempt: 1, priority: 10 },
          runningSince: 1000,
          cancelRequested: false,
        },
        children: [
          {
            id: "watchdog-0",
            machine: "watchdog",
            state: "idle",
            status: "active",
            context: { jobId: null, phase: null },
            children: [],
          },
        ],
      },
      {
        id: "slot-1",
        machine: "jobTask",
        state: "idle",
        status: "active",
        context: { slot: 1, job: null, runningSince: null },
        children: [],
      },
    ],
  };
  const node: InspectorNode & { running: boolean } = {
    nodeId: "n1",
    running: true,
    inspect: () => tree,
    nodeRuntime: {
      root,
      slots: {
        runOf: (s: number) =>
          s === 0 ? { payload: { to: "a@b.c" }, startedAt: 1000, ctx: { deadlineMs: 31_000 } } : null,
      },
    },
    on: (name, l) => events.on(name, l),
  };
  return { node, root, inspect, events };
}

let server: Server | undefined;
let inspector: Inspector | undefined;
afterEach(async () => {
  inspector?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  inspector = undefined;
});

async function serve(i: Inspector, withNext = false): Promise<string> {
  server = createServer((req, res) =>
    withNext
      ? i.handler(req, res, () => {
          res.writeHead(418).end("next");
        })
      : i.handler(req, res),
  );
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("inspector handler", () => {
  it("serves the tree with the busy slots, routes other paths to next, and refuses other methods", async () => {
    const { node } = fakeNode();
    inspector = createInspector(node);
    const base = await serve(inspector, true);
    const view = (await (await fetch(`${base}/debug/actors/`)).json()) as ActorsView;
    expect(view.busy).toEqual([
      {
        slot: 0,
        actor: "slot-0",
        step: "running",
        job: { id: "42", type: "long", attempt: 1, priority: 10 },
        runningSince: 1000,
        cancelRequested: false,
        // The watchdog is not armed yet: the deadline comes from the attempt's context.
        watchdog: {
          phase: "pending",
          deadline: 31_000,
          deadlineAt: "1970-01-01T00:00:31.000Z",
          remainingMs: expect.any(Number),
        },
      },
    ]);
    expect((await fetch(`${base}/other`)).status).toBe(418);
    expect((await fetch(`${base}/debug/actors`, { method: "POST" })).status).toBe(405);
  });

  it("includes payloads only when asked", async () => {
    const { node } = fakeNode();
    inspector = createInspector(node, { includePayloads: true, basePath: "/_pawl/actors" });
    const base = await serve(inspector);
    const view = (await (await fetch(`${base}/_pawl/actors`)).json()) as ActorsView;
    expect(view.busy[0]?.payload).toEqual({ to: "a@b.c" });
    expect((await fetch(`${base}/debug/actors`)).status).toBe(404);
  });

  it("enforces the token on both endpoints, by header or session cookie, never from the URL", async () => {
    const { node } = fakeNode();
    inspector = createInspector(node, { token: "s3cret" });
    const base = await serve(inspector);
    expect((await fetch(`${base}/debug/actors`)).status).toBe(401);
    expect((await fetch(`${base}/debug/actors?token=s3cre`)).status).toBe(401);
    expect(
      (await fetch(`${base}/debug/actors`, { headers: { Authorization: "Bearer s3cretX" } })).status,
    ).toBe(401);
    expect((await fetch(`${base}/debug/actors`, { headers: { Authorization: "Basic s3cret" } })).status).toBe(
      401,
    );
    expect((await fetch(`${base}/debug/actors/stream`)).status).toBe(401);
    // A token in the address would end up in history, links and proxy logs: it is not read there.
    expect((await fetch(`${base}/debug/actors?token=s3cret`)).status).toBe(401);
    expect(
      (await fetch(`${base}/debug/actors`, { headers: { Authorization: "bearer s3cret" } })).status,
    ).toBe(200);
    // The console's session cookie (a digest of the same token) is accepted; the raw token as a cookie is not.
    const cookie = (v: string) => ({ headers: { Cookie: `pawl_session=${v}` } });
    expect((await fetch(`${base}/debug/actors`, cookie(tokenCheck("t", "s3cret").cookieValue))).status).toBe(
      200,
    );
    expect((await fetch(`${base}/debug/actors`, cookie("s3cret"))).status).toBe(401);
    expect((await fetch(`${base}/debug/actors`, cookie(tokenCheck("t", "other").cookieValue))).status).toBe(
      401,
    );
    expect(() => createInspector(node, { token: "" })).toThrow(TypeError);
  });

  it("streams filtered events, subscribing only while a client listens, and ends streams when the node stops", async () => {
    const { node, root, inspect, events } = fakeNode();
    inspector = createInspector(node);
    const base = await serve(inspector);
    expect(inspector.subscribed).toBe(false);
    expect((await fetch(`${base}/debug/actors/stream?types=bogus`)).status).toBe(400);

    const received: Record<string, unknown>[] = [];
    let hello!: () => void;
    const connected = new Promise<void>((r) => (hello = r));
    let ended!: () => void;
    const closed = new Promise<void>((r) => (ended = r));
    get(`${base}/debug/actors/stream?actor=slot-&types=event,snapshot`, (res) => {
      expect(res.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
      void readSse(
        new ReadableStream({
          start(controller) {
            res.on("data", (c: Buffer) => controller.enqueue(new Uint8Array(c)));
            res.on("end", () => controller.close());
          },
        }),
        ({ event, data }) => {
          if (event === "hello") hello();
          else received.push(JSON.parse(data) as Record<string, unknown>);
        },
      ).then(() => ended());
    });
    await connected;
    expect(inspector.subscribed).toBe(true);
    expect(inspector.streams).toBe(1);
    expect(inspect).toHaveBeenCalledTimes(1);
    root.system.get("poller")!.send({ type: "POLL" });
    root.system.get("slot-0")!.send({ type: "START" });
    await vi.waitFor(() => expect(received.some((e) => e.type === "@xstate.snapshot")).toBe(true));
    expect(received.map((e) => [e.type, e.actor])).toEqual([
      ["@xstate.event", "slot-0"],
      ["@xstate.snapshot", "slot-0"],
    ]);
    expect(received[1]).toMatchObject({ snapshot: { value: "running", status: "active" } });

    events.emit("node:stopped", { nodeId: "n1", aborted: 0 });
    await closed;
    await vi.waitFor(() => expect(inspector!.streams).toBe(0));
    expect(inspector.subscribed).toBe(false);
  });

  it("answers 503 past maxStreams, and takes a stream again once one closes", async () => {
    const { node } = fakeNode();
    inspector = createInspector(node, { maxStreams: 1 });
    const base = await serve(inspector);
    const first = await fetch(`${base}/debug/actors/stream`);
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    await reader.read(); // the hello event: the stream is open
    expect(inspector.streams).toBe(1);
    const refused = await fetch(`${base}/debug/actors/stream`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await refused.json()).toEqual({ error: "too many streams (maxStreams 1)" });
    // The tree is not a stream: still served.
    expect((await fetch(`${base}/debug/actors`)).status).toBe(200);
    await reader.cancel();
    await vi.waitFor(() => expect(inspector!.streams).toBe(0));
    const again = await fetch(`${base}/debug/actors/stream`);
    expect(again.status).toBe(200);
    await again.body!.cancel();
    expect(() => createInspector(node, { maxStreams: -1 })).toThrow(TypeError);
  });

  it("answers 503 for a stream of a node that is not running", async () => {
    const { node } = fakeNode();
    node.running = false;
    inspector = createInspector(node);
    const base = await serve(inspector);
    expect((await fetch(`${base}/debug/actors/stream`)).status).toBe(503);
    expect(((await (await fetch(`${base}/debug/actors`)).json()) as ActorsView).running).toBe(false);
  });
});

describe("pawl inspect helpers", () => {
  it("resolves the tree and stream URLs from a base or an endpoint URL", () => {
    const u = (s: string) => {
      const { tree, stream } = inspectorUrls(s);
      return [tree.href, stream.href];
    };
    expect(u("http://h:1")).toEqual(["http://h:1/debug/actors", "http://h:1/debug/actors/stream"]);
    expect(u("http://h:1/debug/actors/stream?token=t")).toEqual([
      "http://h:1/debug/actors?token=t",
      "http://h:1/debug/actors/stream?token=t",
    ]);
    expect(u("https://h/_pawl/actors/")).toEqual(["https://h/_pawl/actors", "https://h/_pawl/actors/stream"]);
    expect(() => inspectorUrls("ftp://h")).toThrow(/http or https/);
    expect(() => inspectorUrls("h:1")).toThrow();
  });

  it("renders the tree with busy slots first and idle slots collapsed", () => {
    const { node } = fakeNode();
    const view: ActorsView = {
      nodeId: "n1",
      running: true,
      at: "2030-01-01T00:00:00.000Z",
      rateLimits: [],
      busy: [
        {
          slot: 0,
          actor: "slot-0",
          step: "running",
          job: { id: "42", type: "long", attempt: 1, priority: 10 },
          runningSince: 1000,
          cancelRequested: false,
          watchdog: { phase: "armed", deadline: 31_000, deadlineAt: null, remainingMs: 30_000 },
        },
      ],
      tree: node.inspect(),
    };
    const text = renderActors(view, 1000);
    expect(text.split("\n")).toEqual([
      "node n1  running  (2030-01-01T00:00:00.000Z)",
      "busy: 1 slot",
      "  slot-0  job 42 (long, attempt 1)  step running  watchdog armed, deadline 1970-01-01T00:00:31Z (in 30.0 s)",
      "",
      "node (node) running  busy=1 free=1 buffered=0 pendingOutcomes=0",
      '├─ slot-0 (jobTask) running  slot=0 job={"id":"42","type":"long","attempt":1,"priority":10} runningSince=1000 cancelRequested=false',
      "│  └─ watchdog-0 (watchdog) idle",
      "└─ 1 idle slot: slot-1",
      "coordinator: transport=none connected=false",
    ]);
    expect(renderActors({ ...view, tree: null })).toContain("has not started");
    const limited = renderActors(
      {
        ...view,
        rateLimits: [
          { key: "type:api", openAt: 3500, closed: true, refused: 12 },
          { key: "type:old", openAt: 500, closed: false, refused: 1 },
        ],
      },
      1000,
    ).split("\n");
    expect(limited.slice(3, 5)).toEqual([
      "rate limits closed: 1 key",
      "  type:api  opens 1970-01-01T00:00:03Z (in 2.5 s)  refused 12",
    ]);
    expect(
      renderEvent({
        type: "@xstate.event",
        at: 0,
        actor: "slot-0",
        source: "node",
        event: { type: "START" },
      }),
    ).toBe("00:00:00.000  slot-0         event     START <- node");
  });

  it("parses SSE split across chunks, with CRLF, comments and multi-line data", async () => {
    const chunks = [
      ": keep-alive\r\n\r\nevent: hel",
      "lo\r\ndata: {}\r\n\r\nid: 1\ndata: a\ndata: b\n\n",
      "data: last\n\n",
    ];
    const got: { event: string; data: string }[] = [];
    await readSse(
      new ReadableStream({
        start(c) {
          for (const s of chunks) c.enqueue(new TextEncoder().encode(s));
          c.close();
        },
      }),
      (e) => void got.push(e),
    );
    expect(got).toEqual([
      { event: "hello", data: "{}" },
      { event: "message", data: "a\nb" },
      { event: "message", data: "last" },
    ]);
  });
});

/**
 * The Stately inspector bridge on a real node: a real WebSocket server on localhost stands in for the
 * inspector's relay (then the relay of `@statelyai/inspect/server` itself), and the node's SSE stream runs
 * beside the bridge. Checks that actor registrations, events and snapshots arrive in the package's wire
 * format, that a result with a secret and a huge field, and an error with a huge message, reach the
 * inspector sanitised exactly as the SSE stream sanitises them, that both follow one subscription of the
 * actor system, that a relay that comes up late gets the deferred events, that close() stops for good,
 * and that a missing package is named.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer, get, type IncomingMessage, type Server } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { createInspectorServer } from "@statelyai/inspect/server";
import { MissingDependencyError, type Pawl } from "../../../src/index.js";
import {
  connectStatelyInspector,
  createInspector,
  InsecureSurfaceError,
  type Inspector,
  type StatelyBridge,
} from "../../../observability/index.js";
import { loadStatelyModules } from "../../../observability/stately-bridge.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { relay, type RelayMessage } from "../../helpers/stately-relay.js";

type Message = RelayMessage;
type SseEvent = { type: string; actor: string; event?: Message["event"]; snapshot?: Message["snapshot"] };

let schema: string;
let cleanup: () => Promise<void>;
let node: Pawl;
let inspector: Inspector;
let http: Server;
let base: string;
const huge = "x".repeat(100_000);

/** Follows the node's SSE stream of one slot; resolves once it is connected. */
async function sse(actor: string) {
  const events: SseEvent[] = [];
  let res!: IncomingMessage;
  await new Promise<void>((resolve, reject) => {
    get(`${base}/debug/actors/stream?actor=${actor}&types=event,snapshot`, (r) => {
      res = r;
      let buffer = "";
      r.setEncoding("utf8");
      r.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith("event: hello")) resolve();
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (data) events.push(JSON.parse(data) as SseEvent);
        }
      });
    }).on("error", reject);
  });
  return { events, close: () => res.destroy() };
}

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("stately"));
  node = testPawl(schema, { concurrency: 1 });
  node.register("bridge.ok", async () => ({ apiKey: "sk-live-0123456789", blob: huge }));
  node.register(
    "bridge.fail",
    async () => {
      throw new Error(`token=sk-live-0123456789 ${huge}`);
    },
    { maxAttempts: 1 },
  );
  await node.start();
  inspector = createInspector(node);
  http = createServer((req, res) => inspector.handler(req, res));
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterAll(async () => {
  inspector?.close();
  await new Promise<void>((r) => http?.close(() => r()));
  await node?.close();
  await cleanup?.();
});

describe("connectStatelyInspector", () => {
  it("sends the actor system, sanitised exactly as the SSE stream, over one subscription", async () => {
    const r = await relay();
    const inspect = vi.spyOn(node.nodeRuntime!.root.system, "inspect");
    const stream = await sse("slot-0");
    let bridge: StatelyBridge | undefined;
    try {
      bridge = await connectStatelyInspector(node, { url: r.url });
      expect(bridge.url).toBe(r.url);
      // The live actors are announced, in the package's wire format, with their machine definitions.
      await vi.waitFor(() =>
        expect(r.messages.some((m) => m.type === "@xstate.actor" && m.name === "poller")).toBe(true),
      );
      const poller = r.messages.find((m) => m.name === "poller")!;
      expect(poller._version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(JSON.parse(poller.definition!)).toMatchObject({
        id: expect.any(String),
        states: expect.any(Object),
      });
      expect(poller.parentId).toBe(r.messages.find((m) => m.type === "@xstate.actor")!.sessionId);
      expect(bridge.connected).toBe(true);

      // A marker no generated id or timestamp can contain (a random node id once held "4111").
      const jobSucceeded = jobEvent(node.events, "job:succeeded");
      const ok = await node.enqueue("bridge.ok", { card: "4111 1111 1111 1111 card-secret" });
      await jobSucceeded.for(ok.id);
      const jobDead = jobEvent(node.events, "job:dead");
      const failed = await node.enqueue("bridge.fail", {});
      await jobDead.for(failed.id);

      const settled = (events: { type: string; event?: Message["event"] }[]) =>
        events.filter((e) => e.type === "@xstate.event" && e.event?.type === "SETTLED").map((e) => e.event);
      await vi.waitFor(() => expect(settled(r.messages)).toHaveLength(2));
      await vi.waitFor(() => expect(settled(stream.events)).toHaveLength(2));
      // The same sanitised events on both: the result redacted, the error's message cut to 500 chars.
      expect(settled(r.messages)).toEqual(settled(stream.events));
      const [success, failure] = settled(r.messages) as { outcome: Record<string, unknown> }[];
      expect(success!.outcome).toEqual({ kind: "success", result: "[redacted]" });
      const message = (failure!.outcome.error as { message: string }).message;
      expect(message).toHaveLength(503);
      expect(message.endsWith("...")).toBe(true);
      const wire = JSON.stringify(r.messages);
      expect(wire).not.toContain("apiKey");
      expect(wire).not.toContain("card-secret");
      expect(wire).not.toContain("4111 1111");
      expect(wire).not.toContain(huge.slice(0, 501));

      // Snapshots too: slot-0's, in the order the stream has them.
      const slot0 = r.messages.find((m) => m.type === "@xstate.actor" && m.name === "slot-0")!.sessionId;
      const snapshots = r.messages.filter((m) => m.type === "@xstate.snapshot" && m.sessionId === slot0);
      const streamed = stream.events.filter((e) => e.type === "@xstate.snapshot");
      await vi.waitFor(() => expect(snapshots.length).toBeGreaterThan(0));
      expect(snapshots.map((m) => m.snapshot)).toEqual(
        streamed.slice(0, snapshots.length).map((e) => e.snapshot),
      );

      // One observation of the system for the stream and the bridge.
      expect(inspect).toHaveBeenCalledTimes(1);
      expect(inspector.subscribed).toBe(true);
    } finally {
      inspect.mockRestore();
      stream.close();
      bridge?.close();
      await r.close();
    }
    await vi.waitFor(() => expect(inspector.streams).toBe(0));
  });

  it("keeps events while the relay is down, sends them when it comes up, and stops for good on close", async () => {
    const port = await freePort();
    const errors: unknown[] = [];
    const bridge = await connectStatelyInspector(node, {
      url: `ws://127.0.0.1:${port}`,
      actors: ["slot-"],
      reconnectMs: 50,
      onError: (e) => errors.push(e),
    });
    await vi.waitFor(() => expect(errors).toHaveLength(1));
    expect(bridge.connected).toBe(false);
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const done = await node.enqueue("bridge.ok", {});
    await jobSucceeded.for(done.id);
    const r = await relay(port);
    try {
      // The deferred events arrive: the announcements and the job's SETTLED, only slot actors' events.
      await vi.waitFor(() => expect(r.messages.some((m) => m.event?.type === "SETTLED")).toBe(true));
      expect(bridge.connected).toBe(true);
      expect(errors).toHaveLength(1);
      bridge.close();
      await vi.waitFor(() => expect(r.sockets.size).toBe(0));
      const connections = r.connections;
      await new Promise((s) => setTimeout(s, 300)); // six reconnect periods
      expect(r.connections).toBe(connections);
      bridge.close();
    } finally {
      bridge.close();
      await r.close();
    }
  });

  it("connected before start(), it follows the node once it starts", async () => {
    const r = await relay();
    const later = testPawl(schema, { concurrency: 1 });
    const bridge = await connectStatelyInspector(later, { url: r.url });
    try {
      await vi.waitFor(() => expect(bridge.connected).toBe(true));
      expect(r.messages).toHaveLength(0);
      later.register("bridge.later", async () => "done");
      await later.start();
      await vi.waitFor(() =>
        expect(r.messages.some((m) => m.type === "@xstate.actor" && m.name === "poller")).toBe(true),
      );
      const jobSucceeded = jobEvent(later.events, "job:succeeded");
      const job = await later.enqueue("bridge.later", {});
      await jobSucceeded.for(job.id);
      await vi.waitFor(() => expect(r.messages.some((m) => m.event?.type === "SETTLED")).toBe(true));
    } finally {
      bridge.close();
      await later.close();
      await r.close();
    }
  });

  it("refuses a relay beyond loopback without a token, and sends a token as a Bearer header", async () => {
    await expect(connectStatelyInspector(node, { url: "ws://10.1.2.3:8080" })).rejects.toBeInstanceOf(
      InsecureSurfaceError,
    );
    const refused = await connectStatelyInspector(node, { url: "ws://u:pa@ss@10.1.2.3:8080" }).catch(
      (e: unknown) => e as Error,
    );
    expect(refused).toBeInstanceOf(InsecureSurfaceError);
    expect((refused as Error).message).not.toContain("pa@ss");
    await expect(connectStatelyInspector(node, { url: "http://[" })).rejects.toBeInstanceOf(TypeError);
    const r = await relay();
    const bridge = await connectStatelyInspector(node, { url: r.url, token: "relay-token" });
    try {
      await vi.waitFor(() => expect(bridge.connected).toBe(true));
      expect(r.authorizations).toEqual(["Bearer relay-token"]);
    } finally {
      bridge.close();
      await r.close();
    }
  });

  it("closed while the relay is down, it never connects again", async () => {
    const port = await freePort();
    let failures = 0;
    const bridge = await connectStatelyInspector(node, {
      url: `ws://127.0.0.1:${port}`,
      reconnectMs: 50,
      onError: () => failures++,
    });
    await vi.waitFor(() => expect(failures).toBe(1));
    bridge.close(); // a reconnect is pending now
    const r = await relay(port);
    try {
      await new Promise((s) => setTimeout(s, 300)); // six reconnect periods
      expect(r.connections).toBe(0);
      expect(bridge.connected).toBe(false);
    } finally {
      await r.close();
    }
  });

  it("talks to @statelyai/inspect's own relay server, which hands the events to the inspector page", async () => {
    const port = await freePort();
    const server = createInspectorServer({ port, autoOpen: false });
    const page: Message[] = [];
    let bridge: StatelyBridge | undefined;
    let ui: WebSocket | undefined;
    try {
      // The relay's page is a WebSocket client too: it receives what the bridge sends.
      await vi.waitFor(async () => {
        ui = new WebSocket(`ws://127.0.0.1:${port}`);
        await new Promise<void>((resolve, reject) => {
          ui!.once("open", () => resolve());
          ui!.once("error", reject);
        });
      });
      ui!.on("message", (data) => page.push(JSON.parse(String(data)) as Message));
      bridge = await connectStatelyInspector(node, { url: `ws://127.0.0.1:${port}` });
      await vi.waitFor(() =>
        expect(page.some((m) => m.type === "@xstate.actor" && m.name === "poller")).toBe(true),
      );
    } finally {
      bridge?.close();
      ui?.close();
      server.stop();
    }
  });
});

describe("loadStatelyModules", () => {
  it("names @statelyai/inspect when it is not installed", async () => {
    // Node's own resolver, from a folder outside this project, where the package is not installed: the
    // real "cannot find module" error (vitest's import() would resolve it from the project root).
    const dir = mkdtempSync(join(tmpdir(), "pawl-stately-"));
    try {
      const requireThere = createRequire(join(dir, "index.js"));
      const error = await loadStatelyModules(async () => requireThere("@statelyai/inspect") as never).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MissingDependencyError);
      expect(error).toMatchObject({ code: "MISSING_DEPENDENCY", packageName: "@statelyai/inspect" });
      expect((error as Error).message).toContain("npm install @statelyai/inspect");
      // Any other failure is not mistaken for a missing package.
      const broken = await loadStatelyModules(() => Promise.reject(new TypeError("boom"))).catch(
        (e: unknown) => e,
      );
      expect(broken).toBeInstanceOf(TypeError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The one contract every coordinator passes, run against the in-memory twin and against real PostgreSQL,
 * RabbitMQ and Hazelcast servers (no mocks). Each transport's test file supplies a factory; the body below
 * is shared, so "the transports behave alike" is checked rather than hoped for.
 *
 * Each test gets its own scope (a fresh channel, exchange, topic or bus name), so counts are never
 * polluted by another test or by another test file running in parallel against the same server.
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { Coordinator, WakeupHint } from "../../coordinators/index.js";
import { eventually, nextEvent, nextHint, record, summarise, waitFor } from "./contract-helpers.js";

/** One isolated channel on the transport under test. */
export interface ContractScope {
  /** A coordinator on this scope's channel, not started. */
  create(nodeId: string, options?: { coalesceMs?: number }): Promise<Coordinator>;
  /** Puts a raw message on the channel, bypassing the hint codec (a foreign or corrupt publisher). */
  publishRaw(payload: string): Promise<void>;
  /** Removes what the scope created on the server (best effort). */
  dispose?(): Promise<void>;
}

/** What a transport's test file provides. */
export interface ContractFactory {
  /** A fresh scope with a unique channel name. */
  scope(): Promise<ContractScope>;
  /** A coordinator pointed at an address where nothing listens. */
  unreachable(nodeId: string): Promise<Coordinator>;
  /**
   * The scope the fault test runs in, when it needs a server of its own (a private Hazelcast member it
   * may stop without disturbing other tests). Default: {@link ContractFactory.scope}.
   */
  faultScope?(): Promise<ContractScope>;
  /** Breaks the connection of the given nodes on the real server (terminate, stop the broker, ...). */
  interrupt?(nodeIds: string[]): Promise<void>;
  /** Undoes {@link ContractFactory.interrupt} (start the broker again); a no-op when it heals itself. */
  restore?(): Promise<void>;
  /** How long reconnection may take after restore, ms. */
  recoveryTimeoutMs?: number;
  /** Marks the fault test skipped at run time when the server cannot be controlled here. */
  canInterrupt?(): boolean;
}

const id = (role: string): string => `${role}-${randomBytes(3).toString("hex")}`;

/**
 * Registers the shared contract suite for one transport.
 *
 * @example
 * ```ts
 * describeCoordinatorContract("in-memory", { scope: async () => ..., unreachable: async () => ... });
 * ```
 */
export function describeCoordinatorContract(name: string, factory: ContractFactory): void {
  describe(`${name} coordinator contract`, () => {
    const cleanups: Array<() => Promise<void>> = [];

    /** A scope plus started nodes on it, all closed after the test. */
    async function cluster(nodeIds: string[], options?: { coalesceMs?: number }, fault = false) {
      const scope = await (fault && factory.faultScope ? factory.faultScope() : factory.scope());
      const nodes = await Promise.all(nodeIds.map((nodeId) => scope.create(nodeId, options)));
      cleanups.push(async () => {
        await Promise.all(nodes.map((node) => node.close()));
        await scope.dispose?.();
      });
      await Promise.all(nodes.map((node) => node.start()));
      // start() may resolve at its deadline on a loaded machine while the connection is still being made.
      await Promise.all(
        nodes.map((node) => (node.status().connected ? undefined : nextEvent(node, "connected", 20_000))),
      );
      return { scope, nodes };
    }

    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });

    it("reports connected once started", async () => {
      const scope = await factory.scope();
      const node = await scope.create(id("a"));
      cleanups.push(async () => {
        await node.close();
        await scope.dispose?.();
      });
      const connected = nextEvent(node, "connected", 10_000);
      await node.start();
      await connected;
      expect(node.status()).toMatchObject({ transport: name, connected: true, reconnects: 0 });
    });

    it("delivers a hint to every other node within milliseconds", async () => {
      const [a, b, c] = (await cluster([id("a"), id("b"), id("c")], { coalesceMs: 0 })).nodes as [
        Coordinator,
        Coordinator,
        Coordinator,
      ];
      const samples: number[] = [];
      for (let i = 1; i <= 30; i++) {
        const sent: WakeupHint = { priority: i, source: statusNode(a), target: `type-${i}` };
        const heard = Promise.all(
          [b, c].map((node) => nextHint(node, (h) => h.target === sent.target, 2_000)),
        );
        const t0 = performance.now();
        a.notifyNewWork(sent);
        const hints = await heard;
        samples.push(performance.now() - t0);
        for (const hint of hints) expect(hint).toMatchObject({ ...sent, kind: "work" });
      }
      const stats = summarise(samples);
      console.log(`[${name}] delivery latency over ${samples.length} round trips (ms):`, stats);
      expect(stats.max).toBeLessThan(500);
    });

    it("ignores its own hints and counts them as suppressed", async () => {
      const [a, b] = (await cluster([id("a"), id("b")])).nodes as [Coordinator, Coordinator];
      const own = record(a);
      const heard = nextHint(b, () => true);
      a.notifyNewWork({ priority: 10, source: statusNode(a) });
      await heard;
      // The sender's own copy comes back over the channel too; wait until it has been seen and dropped.
      await eventually("the sender suppressed its echo", 5_000, () => a.status().suppressed >= 1);
      expect(own).toEqual([]);
      expect(a.status()).toMatchObject({ received: 0, published: 1 });
      expect(b.status()).toMatchObject({ received: 1, suppressed: 0 });
    });

    it("coalesces 10,000 notifications into a bounded number of messages", async () => {
      const [a, b] = (await cluster([id("a"), id("b")])).nodes as [Coordinator, Coordinator];
      const hints = record(b);
      const merged = nextHint(
        b,
        (h) => h.priority === 99 && h.target === undefined,
        5_000,
        "the merged hint",
      );
      for (let i = 0; i < 10_000; i++) {
        a.notifyNewWork({ priority: i % 100, source: statusNode(a), target: i % 2 === 0 ? "even" : "odd" });
      }
      await merged;
      // Hints from one publisher arrive in order: once this marker is in, every earlier message is too.
      const end = nextHint(b, (h) => h.jobId === "end", 5_000, "the end marker");
      a.notifyNewWork({ kind: "cancel", jobId: "end", priority: 0, source: statusNode(a) });
      await end;
      const work = hints.filter((h) => h.kind === "work");
      console.log(`[${name}] 10,000 notifyNewWork calls arrived as ${work.length} messages`);
      expect(work.length).toBeGreaterThanOrEqual(1);
      expect(work.length).toBeLessThanOrEqual(20);
      expect(Math.max(...work.map((h) => h.priority))).toBe(99);
      expect(a.status().published).toBeLessThanOrEqual(21);
      expect(a.status().dropped).toBe(0);
    });

    it("keeps the target when every merged hint names the same one", async () => {
      const [a, b] = (await cluster([id("a"), id("b")])).nodes as [Coordinator, Coordinator];
      const hints = record(b);
      for (let i = 0; i < 1_000; i++)
        a.notifyNewWork({ priority: i % 50, source: statusNode(a), target: "email" });
      await nextHint(b, (h) => h.priority === 49, 5_000, "the merged hint");
      expect(hints.length).toBeGreaterThanOrEqual(1);
      for (const hint of hints) expect(hint.target).toBe("email");
    });

    it("delivers every cancel hint with its job id, never merged away", async () => {
      const [a, b] = (await cluster([id("a"), id("b")])).nodes as [Coordinator, Coordinator];
      const jobIds: string[] = [];
      b.onWakeup((hint) => {
        if (hint.kind === "cancel" && hint.jobId !== undefined) jobIds.push(hint.jobId);
      });
      const last = nextHint(b, (h) => h.jobId === "job-3", 5_000, "the last cancel hint");
      for (let round = 1; round <= 3; round++) {
        for (let i = 0; i < 1_000; i++) a.notifyNewWork({ priority: 10, source: statusNode(a) });
        a.notifyNewWork({ kind: "cancel", jobId: `job-${round}`, priority: 0, source: statusNode(a) });
      }
      await last;
      expect(jobIds).toEqual(["job-1", "job-2", "job-3"]);
    });

    it("ignores and counts malformed and foreign messages", async () => {
      const { scope, nodes } = await cluster([id("a"), id("b")]);
      const [a, b] = nodes as [Coordinator, Coordinator];
      const hints = record(b);
      const garbage = [
        "not json at all",
        JSON.stringify({ hello: "a message from another application" }),
        JSON.stringify({ pawl: 999, kind: "work", priority: 1, source: "future-version" }),
        JSON.stringify({ pawl: 1, kind: "work", priority: "high", source: "x" }),
        JSON.stringify({ pawl: 1, kind: "cancel", priority: 1, source: "x" }),
      ];
      let seen = 0;
      const allSeen = waitFor("five malformed events", 5_000, (resolve) =>
        b.on("malformed", () => {
          if (++seen === garbage.length) resolve(undefined);
        }),
      );
      for (const payload of garbage) await scope.publishRaw(payload);
      await allSeen;
      expect(b.status().malformed).toBe(garbage.length);
      expect(hints).toEqual([]);
      // The channel still works afterwards.
      const heard = nextHint(b, () => true);
      a.notifyNewWork({ priority: 5, source: statusNode(a) });
      expect(await heard).toMatchObject({ priority: 5 });
    });

    it("keeps delivering when a listener throws, and stops after unsubscribe", async () => {
      const [a, b] = (await cluster([id("a"), id("b")], { coalesceMs: 0 })).nodes as [
        Coordinator,
        Coordinator,
      ];
      b.onWakeup(() => {
        throw new Error("a broken listener");
      });
      const removed: WakeupHint[] = [];
      const off = b.onWakeup((hint) => removed.push(hint));
      off();
      const heard = nextHint(b, () => true);
      a.notifyNewWork({ priority: 1, source: statusNode(a) });
      await heard;
      expect(removed).toEqual([]);
    });

    it("closes idempotently and goes quiet", async () => {
      const [a, b] = (await cluster([id("a"), id("b")])).nodes as [Coordinator, Coordinator];
      await Promise.all([b.close(), b.close()]);
      await b.close();
      expect(b.status().connected).toBe(false);
      expect(() => b.notifyNewWork({ priority: 1, source: statusNode(b) })).not.toThrow();
      await b.start(); // after close: resolves, connects nothing
      expect(b.status().connected).toBe(false);
      a.notifyNewWork({ priority: 1, source: statusNode(a) });
      await eventually("the sender heard its own echo", 5_000, () => a.status().suppressed >= 1);
      expect(b.status().received).toBe(0);
    });

    it("starts quickly against a dead address, reports disconnected once, and never throws", async () => {
      const node = await factory.unreachable(id("u"));
      let disconnects = 0;
      node.on("disconnected", () => disconnects++);
      const t0 = performance.now();
      await node.start();
      const elapsed = performance.now() - t0;
      expect(elapsed).toBeLessThan(4_000);
      expect(node.status().connected).toBe(false);
      expect(disconnects).toBe(1);
      for (let i = 0; i < 100; i++)
        expect(() => node.notifyNewWork({ priority: i, source: "u" })).not.toThrow();
      expect(node.status().dropped).toBe(100);
      expect(disconnects).toBe(1);
      const t1 = performance.now();
      await node.close();
      expect(performance.now() - t1).toBeLessThan(3_000);
    });

    it("recovers after losing the server: disconnected, connected, delivery resumes", async (context) => {
      if (factory.interrupt === undefined || factory.canInterrupt?.() === false) context.skip();
      const interrupt = factory.interrupt!;
      const { nodes } = await cluster([id("a"), id("b")], { coalesceMs: 0 }, true);
      const [a, b] = nodes as [Coordinator, Coordinator];
      const lost = Promise.all(nodes.map((node) => nextEvent(node, "disconnected", 20_000)));
      const back = Promise.all(
        nodes.map((node) => nextEvent(node, "connected", factory.recoveryTimeoutMs ?? 30_000)),
      );
      back.catch(() => {}); // awaited below; this only keeps an early failure from also reporting it unhandled
      try {
        await interrupt(nodes.map(statusNode));
        await lost;
        expect(a.status().connected).toBe(false);
        expect(() => a.notifyNewWork({ priority: 1, source: statusNode(a) })).not.toThrow();
      } finally {
        await factory.restore?.();
      }
      await back;
      expect(a.status()).toMatchObject({ connected: true, reconnects: 1 });
      const heard = nextHint(b, (h) => h.target === "after-recovery", 5_000);
      a.notifyNewWork({ priority: 7, source: statusNode(a), target: "after-recovery" });
      expect(await heard).toMatchObject({ priority: 7, target: "after-recovery" });
    }, 180_000);
  });
}

/** The node id a test created a coordinator with (kept on the instance by {@link trackNodeId}). */
function statusNode(node: Coordinator): string {
  const nodeId = nodeIds.get(node);
  if (nodeId === undefined) throw new Error("coordinator was not created through trackNodeId");
  return nodeId;
}

const nodeIds = new WeakMap<Coordinator, string>();

/** Remembers which node id a coordinator was created with; factories wrap their result in it. */
export function trackNodeId<C extends Coordinator>(nodeId: string, node: C): C {
  nodeIds.set(node, nodeId);
  return node;
}

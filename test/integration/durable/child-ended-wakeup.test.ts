/**
 * A parent parked in ctx.waitFor is made runnable by the trigger when its last child ends (migration
 * 0018), and that trigger also sends a wakeup hint on the postgres channel (migration 0022). The child
 * runs on one node and the parent on another, which discovers rows only every ten minutes unless a hint
 * wakes it, so the parent resumes within the test only through that hint.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { onAny } from "../../helpers/events.js";
import { closeAll, setupSchema, startConnected, testPawl } from "../../helpers/pawl.js";

let schema: string;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("kidwake"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

describe("a child's end wakes its waiting parent with a hint", () => {
  it("the parent resumes promptly once its last child ends", async () => {
    let kidId: string | null = null;
    const slow = (i: number) =>
      testPawl(schema, {
        nodeId: `${schema}-n${i}`,
        coordinator: "postgres",
        claimCursorDiscoveryMs: 600_000,
        claimCursorFullDiscoveryMs: 600_000,
        claimCursorFullDiscoveryMaxMs: 600_000,
      });
    // The kid's node: it alone runs kids, so the parent's node learns of the kid's end from the hint only.
    const kids = slow(0);
    kids.register("kid", async (_p: unknown, ctx) => {
      const go = await ctx.waitForSignal<{ n: number }>("go", { timeoutMs: 3_600_000 });
      return go.timedOut ? -1 : go.payload.n;
    });
    const node = slow(1);
    node.register("parent", async (_p: unknown, ctx) => {
      const kid = await ctx.spawn("kid", "kid", {});
      kidId = kid.id;
      return ctx.waitFor<number>("kids", [kid]);
    });
    nodes = [kids, node];
    await Promise.all([startConnected(kids), startConnected(node)]);
    const parent = await node.enqueue("parent", {});
    // Both park: the kid on its signal, the parent on its child.
    const parentParked = onAny(node, "job:waiting", (e) => e.job.id === parent.id);
    const kidParked = onAny(kids, "job:waiting", (e) => e.job.type === "kid");
    await Promise.all([parentParked, kidParked]);
    const done = onAny(node, "job:succeeded", (e) => e.job.id === parent.id);
    await kids.signal(kidId!, { n: 7 }, { name: "go" });
    await done;
    expect((await node.getJob(parent.id))!.result).toEqual([7]);
  });
});

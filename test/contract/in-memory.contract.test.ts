/**
 * The coordinator contract against the in-memory twin: the reference run, needing no server, and the
 * proof that the twin the runtime tests rely on behaves like the real transports.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  createCoordinator,
  InMemoryCoordinator,
  publishRawInMemory,
  type Coordinator,
} from "../../coordinators/index.js";
import { describeCoordinatorContract, trackNodeId } from "./coordinator-contract.js";

const nodes = new Map<string, InMemoryCoordinator>();
let interrupted: string[] = [];

async function create(bus: string, nodeId: string, coalesceMs?: number): Promise<Coordinator> {
  const node = await createCoordinator(`in-memory://${bus}`, {
    nodeId,
    connectionString: "",
    schema: "unused",
    coalesceMs,
  });
  nodes.set(nodeId, node as InMemoryCoordinator);
  return trackNodeId(nodeId, node);
}

describeCoordinatorContract("in-memory", {
  async scope() {
    const bus = `contract-${randomBytes(4).toString("hex")}`;
    return {
      create: (nodeId, options) => create(bus, nodeId, options?.coalesceMs),
      publishRaw: async (payload) => publishRawInMemory(bus, payload),
    };
  },
  async unreachable(nodeId) {
    // The twin has no address to get wrong; a link that is down from the start plays the dead server.
    const node = new InMemoryCoordinator({ transport: "in-memory", bus: `dead-${nodeId}` }, { nodeId });
    node.setConnected(false);
    return trackNodeId(nodeId, node);
  },
  async interrupt(nodeIds) {
    interrupted = nodeIds;
    for (const nodeId of nodeIds) nodes.get(nodeId)?.setConnected(false);
  },
  async restore() {
    for (const nodeId of interrupted) nodes.get(nodeId)?.setConnected(true);
  },
  recoveryTimeoutMs: 2_000,
});

describe("in-memory buses", () => {
  it("keeps differently named buses apart", async () => {
    const a = await create("bus-one", "a");
    const b = await create("bus-two", "b");
    const heard: unknown[] = [];
    b.onWakeup((hint) => heard.push(hint));
    await Promise.all([a.start(), b.start()]);
    a.notifyNewWork({ priority: 1, source: "a" });
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    await Promise.all([a.close(), b.close()]);
    expect(heard).toEqual([]);
    expect(a.status().published).toBe(1);
  });
});

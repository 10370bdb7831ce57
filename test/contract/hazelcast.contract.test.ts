/**
 * The coordinator contract against real Hazelcast members started by scripts/hazelcast.sh (through the
 * test helpers). The ordinary tests use the shared member on 5701. The fault test stops and restarts a
 * private member of its own (own port, own cluster name), so no other test, in this run or in another
 * run on the same machine, ever sees a Hazelcast outage it did not cause.
 */
import { randomBytes } from "node:crypto";
import hazelcast from "hazelcast-client";
import { beforeAll, describe, expect, it } from "vitest";
import { createCoordinator, parseCoordinatorSpec, type Coordinator } from "../../coordinators/index.js";
import {
  ensureHazelcast,
  externalMember,
  privateMember,
  removePrivateMember,
  sharedMember,
  startMember,
  stopMember,
  type MemberRef,
} from "../helpers/hazelcast.js";
import { describeCoordinatorContract, trackNodeId } from "./coordinator-contract.js";

const reconnect = { initialDelayMs: 100, maxDelayMs: 1_000 };

// The first run on a machine downloads the member jar from Maven Central; later starts take ~2 s.
beforeAll(() => ensureHazelcast(), 180_000);

async function create(
  topic: string,
  nodeId: string,
  coalesceMs?: number,
  member = sharedMember,
): Promise<Coordinator> {
  const spec = `hazelcast://${member.address}?cluster=${member.cluster}&topic=${topic}`;
  const node = await createCoordinator(spec, {
    nodeId,
    connectionString: "",
    schema: "unused",
    coalesceMs,
    reconnect,
  });
  return trackNodeId(nodeId, node);
}

const silent = { log() {}, error() {}, warn() {}, info() {}, debug() {}, trace() {} };

/** A plain client of the test's own, publishing whatever it is given (a foreign publisher). */
async function rawPublisher(topic: string) {
  const client = await hazelcast.Client.newHazelcastClient({
    clusterName: sharedMember.cluster,
    network: { clusterMembers: [sharedMember.address] },
    connectionStrategy: { connectionRetry: { clusterConnectTimeoutMillis: 10_000 } },
    customLogger: silent,
  });
  const reliableTopic = await client.getReliableTopic<unknown>(topic);
  return { publish: (message: unknown) => reliableTopic.publish(message), close: () => client.shutdown() };
}

const newTopic = (): string => `pawl-contract-${randomBytes(4).toString("hex")}`;
let faultMember: MemberRef | undefined;

/** The fault test's private member; never falls back to the shared one, which must not be stopped. */
function currentFaultMember(): MemberRef {
  if (faultMember === undefined) throw new Error("the fault scope has not started its private member");
  return faultMember;
}

describeCoordinatorContract("hazelcast", {
  async scope() {
    const topic = newTopic();
    let publisher: Awaited<ReturnType<typeof rawPublisher>> | undefined;
    return {
      create: (nodeId, options) => create(topic, nodeId, options?.coalesceMs),
      async publishRaw(payload) {
        publisher ??= await rawPublisher(topic);
        await publisher.publish(payload);
      },
      dispose: async () => publisher?.close(),
    };
  },
  async faultScope() {
    const member = await privateMember();
    await startMember(member);
    faultMember = member;
    const topic = newTopic();
    return {
      create: (nodeId, options) => create(topic, nodeId, options?.coalesceMs, member),
      publishRaw: () => Promise.reject(new Error("the fault scope publishes no raw messages")),
      dispose: () => removePrivateMember(member),
    };
  },
  unreachable: (nodeId) =>
    create("pawl-unreachable", nodeId, undefined, { ...sharedMember, port: 1, address: "127.0.0.1:1" }),
  // A private member needs Java and the jar here; with an external member (CI container) there may be neither.
  canInterrupt: () => !externalMember,
  interrupt: () => stopMember(currentFaultMember()),
  restore: () => startMember(currentFaultMember()),
  recoveryTimeoutMs: 90_000,
});

describe("hazelcast coordinator specifics", () => {
  it("ignores a published object that is not a string", async () => {
    const topic = newTopic();
    const node = await create(topic, "object-a");
    const publisher = await rawPublisher(topic);
    try {
      await node.start();
      const malformed = new Promise((resolve) => node.on("malformed", resolve));
      await publisher.publish({ pawl: 1, kind: "work", priority: 1, source: "object-publisher" });
      await malformed;
      expect(node.status()).toMatchObject({ malformed: 1, received: 0 });
    } finally {
      await Promise.all([node.close(), publisher.close()]);
    }
  });

  it("requires the cluster name at config time", () => {
    expect(() => parseCoordinatorSpec(`hazelcast://${sharedMember.address}`)).toThrow(/cluster/);
  });
});

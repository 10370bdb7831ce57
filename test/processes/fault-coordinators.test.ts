/**
 * Network coordinator faults under running node processes: the Hazelcast member is killed (`kill -9`) and
 * restarted, and the RabbitMQ broker is stopped and started, FAULT_COORDINATOR_ROUNDS (3) times each,
 * while two nodes using that coordinator work. Destructive (it stops the shared RabbitMQ broker), so it
 * runs only with PAWL_DESTRUCTIVE_TESTS=1 (`npm run test:destructive`, one file at a time, after the main
 * suite). The Hazelcast half never touches the shared member on 5701: it starts a private member of its
 * own (free port, own cluster name) and removes it at the end.
 *
 * Each round: the server goes down; the test enqueues work and holds the outage for at least
 * FAULT_DOWN_MS (4 s) and until a node has claimed some of it (the nodes must keep working by polling);
 * the server comes back; both nodes must report their coordinator connected again, and work must be
 * claimed. Afterwards:
 *   - both node processes are alive and exit 0 at stop (each exits 70 on an uncaughtException or
 *     unhandledRejection, so a crash fails the test);
 *   - every job SUCCEEDED, exactly once (a trigger records each transition to SUCCEEDED);
 *   - the coordinator carries wakeups again, both ways: each node enqueues a probe job only its peer can
 *     claim, the peer receives the wakeup and claims it in well under its poll interval (POLL_MS, 3 s,
 *     in every polling mode, so only the wakeup can explain a fast pickup);
 *   - the nodes' metrics count every outage (`pawl_coordinator_disconnects_total`) and every recovery
 *     (`pawl_coordinator_reconnects_total`).
 * Whatever happens, the servers are restored (finally, and again in afterAll), because CI runs the rest
 * of its steps after this file.
 */
import { execFile, spawn } from "node:child_process";
import { createServer, Socket, type AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import amqp from "amqplib";
import { afterAll, describe, expect, it } from "vitest";
import { createCoordinator } from "../../coordinators/index.js";
import { createPawl, type Pawl } from "../../src/index.js";
import { databaseUrl } from "../helpers/db.js";
import { privateMember, removePrivateMember, startMember, type MemberRef } from "../helpers/hazelcast.js";
import { setupSchema } from "../helpers/pawl.js";
import {
  insertWork,
  installRecorders,
  killAll,
  NodeProcess,
  runStats,
  statusCounts,
  until,
  withDump,
} from "./harness.js";

const enabled = process.env.PAWL_DESTRUCTIVE_TESTS === "1";
const rounds = Number(process.env.FAULT_COORDINATOR_ROUNDS ?? 3);
const downMs = Number(process.env.FAULT_DOWN_MS ?? 4_000);
const broker = process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const hazelcastScript = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts", "hazelcast.sh");
/** Every polling mode of the nodes waits this long, so a claim much sooner after an enqueue was woken. */
const POLL_MS = 3_000;

/** Runs a command; rejects with its stderr. */
function run(
  file: string,
  args: string[],
  env?: Record<string, string>,
  timeoutMs = 150_000,
): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { timeout: timeoutMs, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`${file} ${args.join(" ")} failed: ${stderr.trim() || error.message}`))
        : resolve(stdout),
    ),
  );
}

/** How the test takes a transport's server down and brings it back. */
interface Server {
  /** The fault: the server goes away (the promise resolves once it has). */
  down(round: number): Promise<void>;
  /** The end of the fault: resolves once the server accepts clients again. */
  up(round: number): Promise<void>;
  /** Whatever state a failed test left: the server runs afterwards. Never rejects. */
  restore(): Promise<void>;
}

/** kill -9 and restart of the test's own member through scripts/hazelcast.sh. */
function hazelcastServer(member: MemberRef): Server {
  const env = { HAZELCAST_PORT: String(member.port), HAZELCAST_CLUSTER: member.cluster };
  return {
    down: async () => void (await run("bash", [hazelcastScript, "kill"], env)),
    up: () => startMember(member),
    restore: () => startMember(member).catch((error: unknown) => console.warn(String(error))),
  };
}

/**
 * The shared broker: `rabbitmqctl stop_app` / `start_app`, except the last round, which stops the whole
 * node (`rabbitmqctl stop`) and starts it again as a daemon: the listener and the Erlang VM both go away.
 */
const rabbitServer: Server = {
  async down(round) {
    await run("rabbitmqctl", [round === rounds - 1 ? "stop" : "stop_app"]);
  },
  async up(round) {
    if (round === rounds - 1) startRabbitNode();
    else await run("rabbitmqctl", ["start_app"]);
    await awaitRabbit();
  },
  async restore() {
    try {
      // A stopped node answers no rabbitmqctl command; a node whose app is stopped answers status.
      const nodeUp = await run("rabbitmqctl", ["status"], {}, 30_000).then(
        () => true,
        () => false,
      );
      if (!nodeUp) startRabbitNode();
      else await run("rabbitmqctl", ["start_app"]);
      await awaitRabbit();
    } catch (error) {
      console.warn(`could not restore RabbitMQ: ${String(error)}`);
    }
  },
};

/**
 * `rabbitmq-server -detached`, not waited for: the daemon may keep inherited pipes open, so the command
 * is spawned with no stdio, in a process group of its own, and readiness is {@link awaitRabbit}'s job.
 */
function startRabbitNode(): void {
  const child = spawn("rabbitmq-server", ["-detached"], { stdio: "ignore", detached: true });
  child.on("error", (error) => console.warn(`rabbitmq-server: ${error.message}`));
  child.unref();
}

/** Until the broker has booted; `await_startup` fails at once while the Erlang node is not up yet. */
async function awaitRabbit(): Promise<void> {
  await until(
    async () => (await run("timeout", ["120", "rabbitmqctl", "await_startup"], {}, 130_000), true),
    120_000,
    "RabbitMQ to start",
    500,
  );
}

/** What one transport's run measured; also printed, and recorded in docs/fault-tolerance.md. */
interface Figures {
  faults: number;
  /** Per round: the longest a node took to report its coordinator connected after the server was up. */
  reconnectMs: number[];
  /** Per round: from the server being up to the first claim after it. */
  pickupMs: number[];
  /** Per round: claims made while the server was down. */
  claimsWhileDown: number[];
  /** Per probe: from the probe's enqueue to its claim by the peer (database times). */
  probeMs: number[];
}

type Line = { at: number };
type CoordinatorLine = Line & { state: "connected" | "disconnected" };
type WakeupLine = Line & { target: string | null; source: string };
type ProbeLine = Line & { id: string; type: string };

const firstAfter = (lines: readonly Line[], t: number): number | undefined =>
  lines.map((l) => l.at).find((at) => at >= t);

const coordinatorAt = (p: NodeProcess, state: CoordinatorLine["state"], t: number) =>
  firstAfter(
    p.events<CoordinatorLine>("coordinator").filter((l) => l.state === state),
    t,
  );

const schemas: Array<() => Promise<void>> = [];
const servers: Server[] = [];
const allProcs: NodeProcess[] = [];
let member: MemberRef | undefined;
/** The AMQP exchanges this file declared: non-durable but not auto-deleted, so it removes them. */
const exchanges: string[] = [];

/**
 * Two nodes on `spec`, work flowing, `rounds` outages of `server`; returns the figures and asserts
 * everything listed in the file comment.
 */
async function faultRun(prefix: string, spec: (schema: string) => string, server: Server): Promise<Figures> {
  const { schema, pool, cleanup } = await setupSchema(prefix);
  schemas.push(cleanup);
  await installRecorders(pool, schema);
  // The test's own client has no coordinator: what it enqueues reaches the nodes by polling only.
  const client: Pawl = createPawl({ connectionString: databaseUrl, schema, coordinator: "none" });
  schemas.push(() => client.close());

  const options = {
    coordinator: spec(schema),
    resources: { slots: 3 },
    deadNodeThresholdMs: 5000,
    pollIntervalMs: POLL_MS,
    polling: { burstDelayMs: POLL_MS, minDelayMs: POLL_MS, maxDelayMs: POLL_MS, deepIdleDelayMs: POLL_MS },
  };
  const node = (id: string, own: string, peer: string) =>
    new NodeProcess(`${prefix}-${id}`, schema, options, {
      PAWL_FAULT_KIT: "1",
      PAWL_PROBE_TYPE: own,
      PAWL_PROBE_PEER_TYPE: peer,
    });
  const procs = [node("a", "probe-a", "probe-b"), node("b", "probe-b", "probe-a")];
  allProcs.push(...procs);
  await Promise.all(procs.map((p) => p.ready));

  const figures: Figures = { faults: 0, reconnectMs: [], pickupMs: [], claimsWhileDown: [], probeMs: [] };
  const claimsBetween = (from: number, to: number) =>
    procs.flatMap((p) => p.events("claim")).filter((l) => l.at >= from && l.at <= to).length;
  const feed = async (n: number) => {
    await insertWork(pool, schema, n, 5);
    await client.enqueueMany(Array.from({ length: n / 4 }, () => ({ type: "pwork", payload: {} })));
    await client.chain([{ type: "work" }, { type: "work" }, { type: "work" }]);
  };

  await withDump(procs, async () => {
    await until(
      async () => procs.every((p) => coordinatorAt(p, "connected", 0) !== undefined),
      30_000,
      "connected",
    );
    await feed(40);
    await until(async () => claimsBetween(0, Infinity) > 0, 30_000, "the first claim");

    try {
      for (let round = 0; round < rounds; round++) {
        const before = Date.now();
        await server.down(round);
        figures.faults++;
        const downAt = Date.now();
        await until(
          async () => procs.every((p) => coordinatorAt(p, "disconnected", before) !== undefined),
          30_000,
          `both nodes to report the outage of round ${round + 1}`,
        );
        // Work enqueued during the outage is claimed by polling; the outage lasts until some was.
        await feed(40);
        await until(
          async () => Date.now() - downAt >= downMs && claimsBetween(downAt, Date.now()) > 0,
          30_000,
          `a claim while the server is down (round ${round + 1})`,
        );
        const upStart = Date.now();
        await server.up(round);
        const upAt = Date.now();
        figures.claimsWhileDown.push(claimsBetween(downAt, upStart));
        await feed(20);
        await until(
          async () => procs.every((p) => coordinatorAt(p, "connected", upStart) !== undefined),
          60_000,
          `both nodes to reconnect after round ${round + 1}`,
          50,
        );
        figures.reconnectMs.push(
          Math.max(...procs.map((p) => Math.max(0, coordinatorAt(p, "connected", upStart)! - upAt))),
        );
        await until(
          async () => claimsBetween(upAt, Infinity) > 0,
          30_000,
          `a claim after round ${round + 1}`,
          20,
        );
        figures.pickupMs.push(
          Math.min(...procs.flatMap((p) => p.events("claim").map((l) => l.at)).filter((at) => at >= upAt)) -
            upAt,
        );
      }
    } finally {
      await server.restore();
    }

    let counts: Record<string, number> = {};
    await until(
      async () => {
        counts = await statusCounts(pool, schema);
        return Object.keys(counts).every((s) => s === "SUCCEEDED");
      },
      60_000,
      "every job to succeed",
      250,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}: ${JSON.stringify(counts)}`);
    });

    // The nodes are idle now, each polling every POLL_MS. A probe only the peer can run, picked up much
    // sooner than that, and a wakeup for its type at the peer, show the wakeup went through.
    for (const [sender, receiver] of [procs, [...procs].reverse()] as Array<[NodeProcess, NodeProcess]>) {
      const sent = Date.now();
      sender.probe();
      let probe: ProbeLine | undefined;
      await until(
        async () => (probe = sender.events<ProbeLine>("probe").find((l) => l.at >= sent)) !== undefined,
        10_000,
        "the probe's enqueue",
      );
      const job = probe!;
      let row: { status: string; picked_by: string; ms: number } | undefined;
      await until(
        async () => {
          const { rows } = await pool.query<{ status: string; picked_by: string; ms: number }>(
            `SELECT status, picked_by,
                    (extract(epoch FROM picked_at - created_at) * 1000)::int AS ms
             FROM "${schema}".scheduler_job_all WHERE id = $1`,
            [job.id],
          );
          row = rows[0];
          return row?.status === "SUCCEEDED";
        },
        10_000,
        `probe ${job.type} to succeed`,
        20,
      );
      figures.probeMs.push(row!.ms);
      expect(row!.picked_by).toBe(receiver.nodeId);
      expect(
        receiver.events<WakeupLine>("wakeup").some((l) => l.at >= sent && l.target === job.type),
        `${receiver.nodeId} received no wakeup for ${job.type}`,
      ).toBe(true);
      expect(row!.ms).toBeLessThan(POLL_MS / 2);
    }

    const stats = await runStats(pool, schema);
    for (const p of procs) expect(p.alive, `${p.nodeId} is alive`).toBe(true);
    for (const p of procs) p.term();
    const exits = await Promise.all(procs.map((p) => p.exited));
    const disconnects = procs.map((p) => p.metric("pawl_coordinator_disconnects_total"));
    const reconnects = procs.map((p) => p.metric("pawl_coordinator_reconnects_total"));
    console.log(
      [
        `${prefix}: ${figures.faults} faults`,
        `jobs ${stats.jobs}, succeeded ${stats.succeeded}, successes ${stats.successes}, success twice ${stats.success_twice}, executions ${stats.executions}, ran twice ${stats.ran_twice}`,
        `claims while down per round: ${figures.claimsWhileDown.join(" ")}`,
        `coordinator connected again after the server was up (ms): ${figures.reconnectMs.join(" ")}`,
        `first claim after the server was up (ms): ${figures.pickupMs.join(" ")}`,
        `probe enqueue to claim by the peer (ms): ${figures.probeMs.join(" ")}`,
        `metrics per node: coordinator_disconnects_total ${disconnects.join(" ")}, coordinator_reconnects_total ${reconnects.join(" ")}`,
        `exits: ${JSON.stringify(exits)}`,
      ].join("\n"),
    );

    for (const p of procs) expect(p.fatalLines(), p.stderr.slice(-3000)).toEqual([]);
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    expect(figures.faults).toBe(rounds);
    expect(stats.success_twice).toBe(0);
    expect(stats.successes).toBe(stats.jobs);
    expect(stats.succeeded).toBe(stats.jobs);
    for (const n of figures.claimsWhileDown) expect(n).toBeGreaterThan(0);
    for (const n of disconnects) expect(n).toBeGreaterThanOrEqual(rounds);
    for (const n of reconnects) expect(n).toBeGreaterThanOrEqual(rounds);
  });
  return figures;
}

describe.skipIf(!enabled)("coordinator outages under running nodes (destructive)", () => {
  afterAll(async () => {
    await killAll(allProcs);
    // Whatever happened, the broker runs again and the private member is gone.
    for (const s of servers) await s.restore();
    if (member) await removePrivateMember(member).catch((error: unknown) => console.warn(String(error)));
    if (exchanges.length > 0) {
      const connection = await amqp.connect(broker).catch(() => undefined);
      if (connection) {
        connection.on("error", () => {});
        const channel = await connection.createChannel();
        channel.on("error", () => {});
        for (const name of exchanges) await channel.deleteExchange(name).catch(() => {});
        await connection.close().catch(() => {});
      }
    }
    for (const cleanup of schemas.reverse()) await cleanup().catch(() => {});
  }, 180_000);

  it("hazelcast: nodes survive the member being killed and restarted, and wakeups resume", async () => {
    member = await privateMember();
    const server = hazelcastServer(member);
    servers.push(server);
    await startMember(member);
    const { address, cluster } = member;
    await faultRun(
      "fhz",
      (schema) => `hazelcast://${address}?cluster=${cluster}&topic=pawl-fault-${schema}`,
      server,
    );
  }, 300_000);

  // Found by this file: amqplib's recovery listens for connection errors only once the topology setup
  // has returned, so a reset in the middle of it was an uncaughtException in the host. A proxy of the
  // test's own holds the client's first request after the handshake (setup is then waiting on the
  // broker) and resets the socket; vitest fails the file on an uncaught exception. It stops nothing.
  it("amqp: a connection reset while the topology is being set up stays inside the coordinator", async () => {
    const exchange = `pawl.fault.setup-reset-${process.pid}`;
    exchanges.push(exchange);
    let hold = true;
    const held: Buffer[] = [];
    const clients: Socket[] = [];
    const proxy = createServer((client) => {
      clients.push(client);
      const upstream = new Socket();
      const target = new URL(broker);
      upstream.connect(Number(target.port || 5672), target.hostname);
      let handshakeDone = false;
      upstream.on("data", (data: Buffer) => {
        // connection.open-ok (class 10, method 41): the handshake is over, setup comes next.
        if (data.includes(Buffer.from([0x00, 0x0a, 0x00, 0x29]))) handshakeDone = true;
        client.write(data);
      });
      client.on("data", (data: Buffer) => {
        if (handshakeDone && hold) held.push(data);
        else upstream.write(data);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      client.on("close", () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const port = (proxy.address() as AddressInfo).port;
    const coordinator = await createCoordinator(`amqp://guest:guest@127.0.0.1:${port}?exchange=${exchange}`, {
      nodeId: "setup-reset",
      connectionString: "",
      schema: "unused",
      startTimeoutMs: 200,
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    });
    let connected = false;
    coordinator.on("connected", () => (connected = true));
    try {
      await coordinator.start();
      await until(async () => held.length > 0, 10_000, "setup to wait on the held request");
      expect(connected).toBe(false);
      hold = false;
      clients.at(-1)!.resetAndDestroy();
      await until(async () => connected, 10_000, "the coordinator to connect after the reset");
      expect(coordinator.status().connected).toBe(true);
    } finally {
      await coordinator.close();
      for (const c of clients) c.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("amqp: nodes survive the broker being stopped and started, and wakeups resume", async () => {
    servers.push(rabbitServer);
    await faultRun(
      "fmq",
      (schema) => {
        exchanges.push(`pawl.fault.${schema}`);
        return `${broker}?exchange=pawl.fault.${schema}`;
      },
      rabbitServer,
    );
  }, 300_000);
});

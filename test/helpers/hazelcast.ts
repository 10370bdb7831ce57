/**
 * Hazelcast members for the hazelcast coordinator's tests, wrapped around scripts/hazelcast.sh (there is
 * no Docker here; the script runs the member jar with Java).
 *
 * - The shared member (127.0.0.1:5701, cluster "pawl") serves the ordinary contract tests. The global
 *   setup kicks off its start without waiting, so runs that never touch Hazelcast (unit tests) do not
 *   wait for a JVM; the hazelcast test file calls {@link ensureHazelcast}, which waits for the same start
 *   (the script takes a lock). The teardown stops it only if this run started it.
 * - The restart fault test never stops the shared member, which other test files or a second test run on
 *   the same machine may be using: it gets a private member on a free port, with its own cluster name,
 *   from {@link privateMember}, and stops and starts that one.
 *
 * Set HAZELCAST_MEMBER=host:port to use a member run elsewhere (CI service container, say): then the
 * shared member is neither started nor stopped here. PAWL_SKIP_HAZELCAST=1 keeps the global setup from
 * starting one (say, for unit-test-only runs).
 */
import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { createServer, Socket } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const script = join(root, "scripts", "hazelcast.sh");
const stateRoot = process.env.PAWL_HAZELCAST_DIR ?? join(root, ".hazelcast");

/** A member the script manages: where it listens and which cluster name it answers to. */
export interface MemberRef {
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** The cluster name clients must present. */
  cluster: string;
  /** `host:port`, as coordinator specs want it. */
  address: string;
}

/** Whether the shared member is provided from outside (HAZELCAST_MEMBER) rather than by the script. */
export const externalMember = process.env.HAZELCAST_MEMBER !== undefined;

/** The shared member the ordinary contract tests use. */
export const sharedMember: MemberRef = (() => {
  const address = process.env.HAZELCAST_MEMBER ?? "127.0.0.1:5701";
  return {
    address,
    port: Number(address.slice(address.lastIndexOf(":") + 1)),
    cluster: process.env.HAZELCAST_CLUSTER ?? "pawl",
  };
})();

/** Whether something accepts TCP connections at a member's address (a cheap readiness probe). */
export function isHazelcastUp(member: MemberRef = sharedMember, timeoutMs = 1_000): Promise<boolean> {
  const host = member.address.slice(0, member.address.lastIndexOf(":"));
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (up: boolean): void => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => done(true));
    socket.connect(member.port, host);
  });
}

function run(command: "start" | "stop", member: MemberRef): Promise<void> {
  const env = { ...process.env, HAZELCAST_PORT: String(member.port), HAZELCAST_CLUSTER: member.cluster };
  return new Promise((resolve, reject) => {
    execFile("bash", [script, command], { timeout: 180_000, env }, (error, _stdout, stderr) => {
      if (error)
        reject(new Error(`scripts/hazelcast.sh ${command} failed: ${stderr.trim() || error.message}`));
      else resolve();
    });
  });
}

/** Starts the shared member unless one is already up; resolves once it accepts connections. */
export async function ensureHazelcast(): Promise<void> {
  if (await isHazelcastUp()) return;
  if (externalMember) throw new Error(`no Hazelcast member at HAZELCAST_MEMBER=${sharedMember.address}`);
  await run("start", sharedMember);
}

/** Starts a member (default: the shared one); resolves when it accepts connections. */
export function startMember(member: MemberRef = sharedMember): Promise<void> {
  return run("start", member);
}

/** Stops a member the script started (default: the shared one); resolves when its process has exited. */
export function stopMember(member: MemberRef = sharedMember): Promise<void> {
  return run("stop", member);
}

/**
 * A member of its own for fault tests: a free port and a cluster name nobody else uses, so stopping it
 * disturbs no other test. Not started yet; {@link removePrivateMember} stops it and deletes its state.
 */
export async function privateMember(): Promise<MemberRef> {
  // Below the kernel's ephemeral range (32768+), so an outgoing connection cannot take the port between
  // this check and the JVM binding it.
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (await portIsFree(port))
      return { port, cluster: `pawl-private-${port}`, address: `127.0.0.1:${port}` };
  }
  throw new Error("found no free port for a private Hazelcast member");
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Stops a private member and removes its state directory. */
export async function removePrivateMember(member: MemberRef): Promise<void> {
  await stopMember(member);
  await rm(join(stateRoot, String(member.port)), { recursive: true, force: true });
}

/**
 * For the global setup: begins starting the shared member when none is up, without waiting, and returns
 * the teardown, which stops it only if this run started it. A failure here is only reported: the
 * hazelcast tests call {@link ensureHazelcast} and fail with the real error; other tests do not care.
 */
export async function startHazelcastForRun(): Promise<() => Promise<void>> {
  if (externalMember || process.env.PAWL_SKIP_HAZELCAST === "1" || (await isHazelcastUp()))
    return async () => {};
  const started = run("start", sharedMember).then(
    () => true,
    (error: unknown) => {
      console.warn(`Hazelcast did not start; the hazelcast contract tests will fail: ${String(error)}`);
      return false;
    },
  );
  return async () => {
    if (await started) await run("stop", sharedMember).catch((error: unknown) => console.warn(String(error)));
  };
}

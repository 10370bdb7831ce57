/**
 * The coordinators the bench can run pawl with, by short name (`--latency --coordinator`, the idle axis of
 * `--curves`), and the local Hazelcast member the `hazelcast` one needs.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The coordinator spec of each short name (anything containing `://` is used as given). */
export const COORDINATOR_SPECS: Record<string, string> = {
  none: "none",
  postgres: "postgres",
  amqp: "amqp://guest:guest@127.0.0.1:5672",
  hazelcast: "hazelcast://127.0.0.1:5701?cluster=pawl",
};

/**
 * The spec of a short name or spec URL, with a local Hazelcast member started first when it names
 * Hazelcast and none answers.
 *
 * @throws Error on a name that is neither a known short name nor a spec URL.
 */
export function coordinatorSpec(name: string): string {
  const spec = name.includes("://") ? name : COORDINATOR_SPECS[name];
  if (!spec)
    throw new Error(`unknown coordinator ${name}: use none, postgres, amqp, hazelcast or a spec URL`);
  if (spec.startsWith("hazelcast")) ensureHazelcast();
  return spec;
}

/** Starts the local Hazelcast member (scripts/hazelcast.sh) unless one is running. */
function ensureHazelcast(): void {
  const script = fileURLToPath(new URL("../../hazelcast.sh", import.meta.url));
  try {
    execFileSync("bash", [script, "status"], { stdio: "ignore" });
  } catch {
    console.error("starting a local Hazelcast member (scripts/hazelcast.sh start)...");
    execFileSync("bash", [script, "start"], { stdio: ["ignore", 2, 2] });
  }
}

/**
 * Configuration of the Hazelcast coordinator, parsed from
 * `hazelcast://host:port[,host2:port]?cluster=name[&topic=name]`.
 *
 * A list of hosts is not a URL the WHATWG parser accepts, so the spec is split by hand. The cluster name
 * is required: a client with the wrong one is refused by every member, and "connects but never hears
 * anything" is far harder to diagnose than an error at startup. Unknown parameters are rejected too.
 */
import { ValidationError } from "../../src/core/errors.js";
import { coordinatorInt } from "../coordinator-options.js";

/** The reliable topic used when the spec names none. */
export const DEFAULT_HAZELCAST_TOPIC = "pawl-wakeup";

/** Input to {@link resolveHazelcastConfig}: what a caller sets in code. */
export interface HazelcastCoordinatorInput {
  /** Member addresses, `host:port` (port defaults to 5701). */
  members: string[];
  /** The cluster name the members are configured with. */
  clusterName: string;
  /** The reliable topic all nodes of one pawl cluster share. Default `pawl-wakeup`. */
  topic?: string;
  /** Bound on one TCP connect to a member, ms. Default 5,000. */
  connectTimeoutMs?: number;
}

/** The resolved configuration of the hazelcast coordinator. */
export interface HazelcastCoordinatorConfig {
  readonly transport: "hazelcast";
  readonly members: string[];
  readonly clusterName: string;
  readonly topic: string;
  readonly connectTimeoutMs: number;
}

const hostPort = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/;
const objectName = /^[A-Za-z0-9._:-]{1,200}$/;

function invalid(message: string): ValidationError {
  return new ValidationError("INVALID_COORDINATOR", message);
}

/** Normalises one `host[:port]` to `host:port`, or throws. */
function member(text: string): string {
  const match = hostPort.exec(text);
  const port = match?.[2] === undefined ? 5701 : Number(match[2]);
  if (match === null || port < 1 || port > 65_535) {
    throw invalid(`hazelcast member "${text}" is not host:port`);
  }
  return `${match[1]}:${port}`;
}

/**
 * Parses a hazelcast coordinator spec.
 *
 * @example
 * ```ts
 * parseHazelcastSpec("hazelcast://10.0.0.1:5701,10.0.0.2:5701?cluster=prod");
 * // { members: ["10.0.0.1:5701", "10.0.0.2:5701"], clusterName: "prod" }
 * ```
 */
export function parseHazelcastSpec(spec: string): HazelcastCoordinatorInput {
  const text = spec.trim();
  const prefix = "hazelcast://";
  if (!text.startsWith(prefix)) throw invalid(`"${text}" is not a hazelcast:// spec`);
  const rest = text.slice(prefix.length);
  const queryAt = rest.indexOf("?");
  const hosts = (queryAt === -1 ? rest : rest.slice(0, queryAt)).replace(/\/$/, "");
  if (hosts === "")
    throw invalid("hazelcast spec has no member address (hazelcast://host:port?cluster=name)");
  const input: HazelcastCoordinatorInput = { members: hosts.split(",").map(member), clusterName: "" };
  const params = new URLSearchParams(queryAt === -1 ? "" : rest.slice(queryAt + 1));
  for (const [key, value] of params) {
    if (key === "cluster") input.clusterName = value;
    else if (key === "topic") input.topic = value;
    else throw invalid(`hazelcast spec has unknown parameter "${key}" (known: cluster, topic)`);
  }
  if (input.clusterName === "") {
    throw invalid("hazelcast spec needs the cluster name: hazelcast://host:port?cluster=<name>");
  }
  resolveHazelcastConfig(input); // validates now, at config time
  return input;
}

/** Applies defaults and validates. */
export function resolveHazelcastConfig(input: HazelcastCoordinatorInput): HazelcastCoordinatorConfig {
  if (!Array.isArray(input.members) || input.members.length === 0) {
    throw invalid("hazelcast coordinator needs at least one member address");
  }
  const members = input.members.map(member);
  if (typeof input.clusterName !== "string" || !objectName.test(input.clusterName)) {
    throw invalid(
      `hazelcast cluster name "${String(input.clusterName)}" is invalid (1-200 of A-Z a-z 0-9 . _ : -)`,
    );
  }
  const topic = input.topic ?? DEFAULT_HAZELCAST_TOPIC;
  if (!objectName.test(topic)) {
    throw invalid(`hazelcast topic "${topic}" is invalid (1-200 of A-Z a-z 0-9 . _ : -)`);
  }
  return {
    transport: "hazelcast",
    members,
    clusterName: input.clusterName,
    topic,
    connectTimeoutMs: coordinatorInt("connectTimeoutMs", input.connectTimeoutMs ?? 5_000, 100, 600_000),
  };
}

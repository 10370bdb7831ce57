/**
 * Configuration of the in-memory coordinator: which process-wide bus to join. Nodes that name the same
 * bus hear each other; tests give each scenario its own bus name so they cannot cross-talk.
 */
import { ValidationError } from "../../src/core/errors.js";

/** The bus a spec without a name joins. */
export const DEFAULT_IN_MEMORY_BUS = "default";

/** The in-memory coordinator's configuration. */
export interface InMemoryCoordinatorConfig {
  readonly transport: "in-memory";
  /** The name of the process-wide bus to join: 1-200 of `A-Z a-z 0-9 . _ -`. */
  readonly bus: string;
}

const busName = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Parses `in-memory` or `in-memory://<bus-name>`.
 *
 * @example
 * ```ts
 * parseInMemorySpec("in-memory://cluster-a"); // { transport: "in-memory", bus: "cluster-a" }
 * ```
 */
export function parseInMemorySpec(spec: string): InMemoryCoordinatorConfig {
  const text = spec.trim();
  if (text === "in-memory" || text === "in-memory://")
    return { transport: "in-memory", bus: DEFAULT_IN_MEMORY_BUS };
  const prefix = "in-memory://";
  if (!text.startsWith(prefix)) {
    throw new ValidationError("INVALID_COORDINATOR", `"${spec}" is not an in-memory coordinator spec`);
  }
  return validateInMemoryConfig({ transport: "in-memory", bus: text.slice(prefix.length) });
}

/** Validates a config built in code. */
export function validateInMemoryConfig(config: InMemoryCoordinatorConfig): InMemoryCoordinatorConfig {
  if (typeof config.bus !== "string" || !busName.test(config.bus)) {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      `in-memory bus name must be 1-200 characters of A-Z a-z 0-9 . _ -, got "${String(config.bus)}"`,
    );
  }
  return config;
}

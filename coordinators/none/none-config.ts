/**
 * Configuration of the `none` coordinator. It has nothing to configure; the file exists so every
 * coordinator folder has the same shape, and so the spec parser has one place that says which strings
 * mean "no coordinator".
 */
import { ValidationError } from "../../src/core/errors.js";

/** The `none` coordinator's (empty) configuration. */
export interface NoneCoordinatorConfig {
  readonly transport: "none";
}

/**
 * Parses a spec meaning "no coordinator": `undefined`, `""` or `"none"` (any case, surrounding spaces
 * ignored).
 *
 * @example
 * ```ts
 * parseNoneSpec("none"); // { transport: "none" }
 * ```
 */
export function parseNoneSpec(spec: string | undefined): NoneCoordinatorConfig {
  const text = (spec ?? "").trim().toLowerCase();
  if (text !== "" && text !== "none") {
    throw new ValidationError("INVALID_COORDINATOR", `"${spec}" is not the none coordinator spec`);
  }
  return { transport: "none" };
}

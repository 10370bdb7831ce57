/**
 * The machines a node runs, by job type and version. A job stays on the version it started with while
 * that version is registered; when it is not (it was dropped from the code), the job moves to the type's
 * current version, the one registered last, if its snapshot fits that one (the runner checks).
 */
import type { AnyStateMachine } from "xstate";
import { ValidationError } from "../../core/errors.js";
import { machineDefinition, type MachineDefinition } from "./machine-definition.js";

/** The definitions of one machine job type. */
interface TypeEntry {
  current: MachineDefinition;
  versions: Map<string, MachineDefinition>;
}

/** Turns a `version` option into its stored text. @throws ValidationError for a bad one. */
export function machineVersion(version: unknown): string {
  if (version === undefined) return "1";
  if (typeof version === "number" && Number.isSafeInteger(version) && version >= 0) return String(version);
  if (typeof version === "string" && /^[\w.+-]{1,64}$/.test(version)) return version;
  throw new ValidationError(
    "INVALID_OPTION",
    `invalid machine version ${JSON.stringify(version)}: use a non-negative integer or up to 64 of [A-Za-z0-9_.+-]`,
  );
}

/** The machine definitions registered on one node. */
export class MachineRegistry {
  private readonly types = new Map<string, TypeEntry>();

  /**
   * Checks a machine and builds its definition, without registering it.
   *
   * @throws ValidationError for a machine that cannot be durable or a bad version.
   */
  static define(type: string, machine: AnyStateMachine, version: unknown): MachineDefinition {
    return machineDefinition(type, machine, machineVersion(version));
  }

  /** Adds a definition; it becomes the type's current one (new jobs start on it). */
  add(def: MachineDefinition): MachineDefinition {
    const type = def.type;
    const entry = this.types.get(type);
    if (entry) {
      entry.versions.set(def.version, def);
      entry.current = def;
    } else {
      this.types.set(type, { current: def, versions: new Map([[def.version, def]]) });
    }
    return def;
  }

  /** Whether `type` is a machine on this node. */
  has(type: string): boolean {
    return this.types.has(type);
  }

  /** The machine types registered on this node. */
  typeNames(): string[] {
    return [...this.types.keys()];
  }

  /** The type's current definition. */
  current(type: string): MachineDefinition | undefined {
    return this.types.get(type)?.current;
  }

  /** The definition a job on `version` runs on: that version while registered, else the current one. */
  definition(type: string, version: string | null): MachineDefinition | undefined {
    const entry = this.types.get(type);
    if (!entry) return undefined;
    return (version === null ? undefined : entry.versions.get(version)) ?? entry.current;
  }
}

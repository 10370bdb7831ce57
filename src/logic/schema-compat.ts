/**
 * Whether a node of this release may run on a schema, from what the schema has had and what the release
 * knows: the pure half of the check `start()` and the CLI make (graphile-worker's rule, written down).
 *
 * - The schema lacks migrations this release has: `behind`. The node would fail on a missing column
 *   (or, worse, misbehave), so it refuses and says which command to run.
 * - The schema has migrations this release does not know (a newer release migrated it during a rolling
 *   upgrade): `ahead`, fine when every one of them declared itself compatible with the previous release,
 *   `incompatible` when one is breaking: then this node must not run, and says to deploy the new release.
 */

/** What the check looks at: the schema's versions and this release's. */
export interface SchemaFacts {
  /** The schema's newest applied version (0 when not migrated). */
  schemaVersion: number;
  /** The newest version this release knows. */
  requiredVersion: number;
  /** Migrations of this release the schema has not had (file names). */
  pending: readonly string[];
  /** Versions the schema has that this release does not know. */
  unknown: readonly number[];
  /** Of `unknown`, the breaking ones. */
  unknownBreaking: readonly number[];
}

/** The verdict. */
export type SchemaVerdict =
  | { kind: "current" }
  | { kind: "behind"; pending: readonly string[] }
  | { kind: "ahead"; unknown: readonly number[] }
  | { kind: "incompatible"; breaking: readonly number[] };

/**
 * Decides whether this release may run on the schema.
 *
 * @example
 * ```ts
 * schemaVerdict({ schemaVersion: 10, requiredVersion: 12, pending: ["0011_a.sql", "0012_b.sql"], unknown: [], unknownBreaking: [] });
 * // { kind: "behind", pending: ["0011_a.sql", "0012_b.sql"] }
 * ```
 */
export function schemaVerdict(f: SchemaFacts): SchemaVerdict {
  if (f.pending.length > 0) return { kind: "behind", pending: f.pending };
  if (f.unknownBreaking.length > 0) return { kind: "incompatible", breaking: f.unknownBreaking };
  if (f.unknown.length > 0) return { kind: "ahead", unknown: f.unknown };
  return { kind: "current" };
}

/**
 * The message for a verdict that stops the node, naming both versions and the command to run; null for
 * one that lets it run.
 */
export function schemaVerdictMessage(
  verdict: SchemaVerdict,
  f: SchemaFacts,
  schema: string,
  release: string,
): string | null {
  switch (verdict.kind) {
    case "behind":
      if (f.schemaVersion === 0) {
        return (
          `schema "${schema}" has no pawl tables yet (version 0; pawl ${release} needs version ` +
          `${f.requiredVersion}): has "pawl migrate" run for this schema? Run "pawl migrate --schema ` +
          `${schema}" or await pawl.migrate() with a role that may create tables there`
        );
      }
      return (
        `schema "${schema}" is at version ${f.schemaVersion}, but pawl ${release} needs version ` +
        `${f.requiredVersion} (pending: ${verdict.pending.join(", ")}): run "pawl migrate --schema ${schema}" ` +
        `or await pawl.migrate() with a role that owns the schema, then start again`
      );
    case "incompatible":
      return (
        `schema "${schema}" is at version ${f.schemaVersion}, newer than pawl ${release} knows ` +
        `(${f.requiredVersion}), and migration ${verdict.breaking.join(", ")} is incompatible with older ` +
        `releases: deploy the release that applied it on this node`
      );
    default:
      return null;
  }
}

/**
 * The schema version check a node makes at `start()` and the CLI before a command that reads or writes
 * jobs: the release's migrations against the schema's (src/logic/schema-compat.ts decides). A schema
 * behind the release, or ahead of it by a breaking migration, is a SchemaVersionError naming both versions
 * and what to run; a schema ahead by compatible migrations (a rolling upgrade in progress) is logged and
 * the node runs.
 */
import { SchemaVersionError } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { schemaVerdict, schemaVerdictMessage, type SchemaVerdict } from "../logic/schema-compat.js";
import { packageVersion } from "../core/package-version.js";
import type { JobStore } from "../store/job-store.js";

/**
 * Reads the schema's migrations and checks them against this release.
 *
 * @throws SchemaVersionError `SCHEMA_OUTDATED` or `SCHEMA_INCOMPATIBLE`, saying what to do.
 */
export async function checkSchemaVersion(store: JobStore, logger: Logger): Promise<SchemaVerdict> {
  const status = await store.migrationStatus();
  const facts = {
    schemaVersion: status.version,
    requiredVersion: status.required,
    pending: status.pending.map((m) => m.name),
    unknown: status.unknown,
    unknownBreaking: status.unknownBreaking,
  };
  const verdict = schemaVerdict(facts);
  const message = schemaVerdictMessage(verdict, facts, store.schema, packageVersion());
  if (message !== null) {
    throw new SchemaVersionError(
      verdict.kind === "behind" ? "SCHEMA_OUTDATED" : "SCHEMA_INCOMPATIBLE",
      message,
      {
        schemaVersion: facts.schemaVersion,
        requiredVersion: facts.requiredVersion,
      },
    );
  }
  if (verdict.kind === "ahead") {
    logger.info("the schema is newer than this release; its newer migrations are compatible", {
      schemaVersion: facts.schemaVersion,
      releaseSchemaVersion: facts.requiredVersion,
      release: packageVersion(),
    });
  }
  return verdict;
}

/**
 * What the PgBouncer tests share: the pooler's URL (PAWL_PGBOUNCER_URL, exported by .ci/run, which starts
 * PgBouncer in transaction mode with scripts/pgbouncer.sh), a check that it answers, and a logger that
 * keeps every line so a test can assert that a run through the pooler logged no warning and no error.
 */
import pg from "pg";
import type { HostLogger } from "../../../src/core/logger.js";

/** The pooler's URL, or undefined when this machine has none (the tests then skip, saying so). */
export const poolerUrl: string | undefined = process.env.PAWL_PGBOUNCER_URL || undefined;

/** Why the PgBouncer tests are skipped, printed once per file. */
export function skipMessage(file: string): string {
  return (
    `${file}: skipped, PAWL_PGBOUNCER_URL is not set. Run scripts/pgbouncer.sh start and ` +
    `export PAWL_PGBOUNCER_URL=$(scripts/pgbouncer.sh url) (.ci/run does both)`
  );
}

/** Fails fast with a clear message when PAWL_PGBOUNCER_URL is set but nothing answers there. */
export async function assertPoolerAnswers(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new Error(`PAWL_PGBOUNCER_URL is set but the pooler does not answer: ${String(error)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** One logged line. */
export interface LoggedLine {
  level: "debug" | "info" | "warn" | "error";
  message: string;
  meta?: unknown;
}

/** A logger that records every line; `problems()` lists the warnings and errors. */
export function capturingLogger(): HostLogger & { lines: LoggedLine[]; problems(): LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const at =
    (level: LoggedLine["level"]) =>
    (message: string, meta?: unknown): void => {
      lines.push({ level, message, meta });
    };
  return {
    lines,
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    problems: () => lines.filter((l) => l.level === "warn" || l.level === "error"),
  };
}

/** The direct URL of the database the pooler fronts (the tests' own database). */
export const directUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/**
 * The CLI in-process: main() with its output captured, so a test reads what `pawl ...` printed and its
 * exit code without spawning a process.
 */
import { main } from "../../src/cli/main.js";
import { databaseUrl } from "./db.js";

/** What one run of the CLI printed, and its exit code. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `pawl <argv>`. `env` is the whole environment the CLI sees: none by default, so the machine's
 * DATABASE_URL or PAWL_SCHEMA cannot leak in (pass `process.env` to give it the process's own).
 */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main([...argv], {
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    env,
  });
  return { code, stdout, stderr };
}

/** Runs `pawl <argv> --schema <schema> --database-url <the test database>`. */
export function runCliOn(schema: string, ...argv: string[]): Promise<CliRun> {
  return runCli([...argv, "--schema", schema, "--database-url", databaseUrl]);
}

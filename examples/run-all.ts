/**
 * Runs every example briefly against the local PostgreSQL: each `examples/<name>/main.ts` is started with
 * `--once` and `PAWL_EXAMPLE_DURATION_MS` (see examples/shared/lifecycle.ts), and must exit 0 on its own
 * and print at least one `[<name>] progress ...` line. Examples run one after another; the exit code is 1
 * if any failed.
 *
 *   npm run examples                    # all of them
 *   npm run examples -- demo            # only these
 *   EXAMPLES_DURATION_MS=8000 npm run examples
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const durationMs = Number(process.env.EXAMPLES_DURATION_MS ?? 4_000);
/** Time an example may take beyond its duration (start-up, migrations, graceful stop) before it is killed. */
const slackMs = Number(process.env.EXAMPLES_SLACK_MS ?? 60_000);
const progressLine = /^\[[^\]]+\] progress /m;

const only = process.argv.slice(2);
const examples = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "main.ts")))
  .map((d) => d.name)
  .filter((name) => only.length === 0 || only.includes(name))
  .sort();

interface Outcome {
  name: string;
  ok: boolean;
  why: string;
  ms: number;
}

function runExample(name: string): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", join("examples", name, "main.ts"), "--once"], {
      cwd: root,
      env: { ...process.env, PAWL_EXAMPLE_DURATION_MS: String(durationMs) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    const relay = (stream: NodeJS.WriteStream) => (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      if (stream === process.stdout) stdout += text;
      stream.write(text);
    };
    child.stdout.on("data", relay(process.stdout));
    child.stderr.on("data", relay(process.stderr));
    let timedOut = false;
    const killer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
    }, durationMs + slackMs);
    child.on("error", (error) => {
      clearTimeout(killer);
      resolve({ name, ok: false, why: `could not start: ${error.message}`, ms: Date.now() - started });
    });
    child.on("close", (code, signal) => {
      clearTimeout(killer);
      const ms = Date.now() - started;
      if (timedOut)
        return resolve({ name, ok: false, why: `did not exit within ${durationMs + slackMs} ms`, ms });
      if (code !== 0) return resolve({ name, ok: false, why: `exited with ${code ?? signal}`, ms });
      if (!progressLine.test(stdout))
        return resolve({ name, ok: false, why: "printed no progress line", ms });
      resolve({ name, ok: true, why: "ok", ms });
    });
  });
}

if (examples.length === 0) {
  console.error(`run-all: no examples found${only.length ? ` named ${only.join(", ")}` : ""}`);
  process.exit(1);
}
const outcomes: Outcome[] = [];
for (const name of examples) {
  console.log(`run-all: ${name} (for ${durationMs} ms)`);
  outcomes.push(await runExample(name));
}
console.log("\nrun-all:");
for (const o of outcomes)
  console.log(
    `  ${o.ok ? "ok  " : "FAIL"} ${o.name} (${(o.ms / 1000).toFixed(1)} s)${o.ok ? "" : `: ${o.why}`}`,
  );
const failed = outcomes.filter((o) => !o.ok).length;
console.log(`${outcomes.length - failed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);

/**
 * What every example shares: how long it runs, how it logs, and how it shuts down.
 *
 * An example runs until SIGINT or SIGTERM. The first signal starts a graceful shutdown (the example stops
 * its node with a grace period); a second one asks it to abort running jobs at once; a third exits on the
 * spot. For CI, `--once` or `PAWL_EXAMPLE_DURATION_MS=<ms>` makes it shut down by itself after a few
 * seconds, exactly as if it had received the first signal. `examples/run-all.ts` relies on this contract,
 * and on each example printing `[<name>] progress ...` lines.
 */

/** The database the examples use. */
export const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** How long `--once` runs when no duration is set in the environment. */
const defaultOnceMs = 5_000;

/** What {@link lifecycle} gives an example. */
export interface Lifecycle {
  /** How long the example runs before it shuts down by itself, or null to run until a signal. */
  readonly durationMs: number | null;
  /** Resolves when shutdown should begin, with the reason (a signal's name, or "duration elapsed"). */
  readonly stopping: Promise<string>;
  /** Registers what a second signal does (abort at once). */
  onForce(fn: () => void): void;
  /** Prints `[name] message`. */
  log(message: string): void;
  /** Prints `[name] progress message`: run-all checks that every example prints at least one. */
  progress(message: string): void;
}

function readDuration(envNames: readonly string[]): number | null {
  for (const name of envNames) {
    const raw = process.env[name];
    if (raw === undefined || raw === "") continue;
    const ms = Number(raw);
    if (!Number.isFinite(ms) || ms <= 0) throw new Error(`${name}=${raw} is not a positive number of ms`);
    return ms;
  }
  return process.argv.includes("--once") ? defaultOnceMs : null;
}

/**
 * Sets up an example's run: its duration (from `durationEnv`, then `PAWL_EXAMPLE_DURATION_MS`, then
 * `--once`), its signal handling and its log prefix.
 */
export function lifecycle(name: string, options: { durationEnv?: string } = {}): Lifecycle {
  const durationMs = readDuration([
    ...(options.durationEnv ? [options.durationEnv] : []),
    "PAWL_EXAMPLE_DURATION_MS",
  ]);
  const force: (() => void)[] = [];
  let signals = 0;
  let begin!: (reason: string) => void;
  const stopping = new Promise<string>((resolve) => (begin = resolve));
  const log = (message: string) => console.log(`[${name}] ${message}`);

  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      begin(signal);
    } else if (signals === 2) {
      log(`${signal} again: aborting running jobs (a third signal exits at once)`);
      for (const fn of force) fn();
    } else {
      process.exit(130);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  if (durationMs !== null) {
    setTimeout(() => begin("duration elapsed"), durationMs).unref();
  }
  return {
    durationMs,
    stopping,
    onForce: (fn) => force.push(fn),
    log,
    progress: (message) => log(`progress ${message}`),
  };
}

/** Resolves after `ms` (examples only: the library and its tests never sleep). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

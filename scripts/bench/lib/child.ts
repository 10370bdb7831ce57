/**
 * Each measurement runs in a fresh child process: no system's timers, pools, JIT state or garbage are
 * left in the process that measures the next one, and `process.cpuUsage()` covers one system only.
 *
 * The child opens and closes its timed window through the parent ({@link openWindow}, {@link closeWindow})
 * so that the parent's /proc sampling of database CPU runs outside the measured process.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { CpuWindowMeter, type CpuWindow } from "./cpu-meter.js";

type ChildMessage =
  | { kind: "window"; action: "open" | "close" }
  | { kind: "result"; data: unknown }
  | { kind: "error"; message: string; stack?: string };

type ParentMessage = { kind: "window-ack"; cpu?: CpuWindow };

/** Options of {@link runChild}. */
export interface RunChildOptions {
  /** The database whose backends count as database CPU. */
  database: string;
  /** Extra node flags (e.g. `--expose-gc`), added to the tsx loader flags inherited from this process. */
  extraExecArgv?: string[];
  /** Kill the child after this long. Default 1 hour. */
  timeoutMs?: number;
}

/**
 * Runs `script` (a path relative to scripts/bench/) in a child process with `input` as its argument and
 * resolves with what it reports through {@link reportResult}.
 */
export function runChild<T>(script: string, input: unknown, options: RunChildOptions): Promise<T> {
  const path = fileURLToPath(new URL(`../${script}`, import.meta.url));
  return new Promise<T>((resolve, reject) => {
    // fork() inherits process.execArgv, which under tsx carries its loader: the child runs TypeScript too.
    const child = fork(path, [JSON.stringify(input)], {
      execArgv: [...process.execArgv, ...(options.extraExecArgv ?? [])],
      // The child's stdout goes to our stderr: stdout carries only the report (and `--json`).
      stdio: ["ignore", 2, "inherit", "ipc"],
    });
    const meter = new CpuWindowMeter(options.database, child.pid);
    let settled = false;
    const timer = setTimeout(() => {
      finish(new Error(`${script} did not finish within ${options.timeoutMs ?? 3_600_000} ms`));
      child.kill("SIGKILL");
    }, options.timeoutMs ?? 3_600_000);
    const finish = (error: Error | null, value?: T) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value as T);
    };
    child.on("message", (raw) => {
      const msg = raw as ChildMessage;
      if (msg.kind === "window") {
        if (msg.action === "open") {
          meter.open();
          child.send({ kind: "window-ack" } satisfies ParentMessage);
        } else {
          child.send({ kind: "window-ack", cpu: meter.close() } satisfies ParentMessage);
        }
      } else if (msg.kind === "result") {
        finish(null, msg.data as T);
      } else if (msg.kind === "error") {
        const e = new Error(msg.message);
        if (msg.stack) e.stack = msg.stack;
        finish(e);
      }
    });
    child.on("error", (e) => finish(e));
    child.on("exit", (code, signal) => {
      if (!settled) finish(new Error(`${script} exited (${signal ?? `code ${code}`}) without a result`));
    });
  });
}

// ---- child side ----

const waiting: ((msg: ParentMessage) => void)[] = [];
let listening = false;
let localMeter: CpuWindowMeter | undefined;

function request(action: "open" | "close"): Promise<ParentMessage> {
  if (!listening) {
    listening = true;
    process.on("message", (raw) => waiting.shift()?.(raw as ParentMessage));
  }
  return new Promise((resolve) => {
    waiting.push(resolve);
    process.send!({ kind: "window", action } satisfies ChildMessage);
  });
}

/** The child's input (the JSON its parent passed), for a script started by {@link runChild}. */
export function childInput<T>(): T {
  const raw = process.argv[2];
  if (!raw) throw new Error("this script is started by scripts/bench/main.ts (it takes a JSON argument)");
  return JSON.parse(raw) as T;
}

/** Opens the timed window (database CPU is counted from here). */
export async function openWindow(database: string): Promise<void> {
  if (process.send) {
    await request("open");
    return;
  }
  localMeter = new CpuWindowMeter(database, undefined);
  localMeter.open();
}

/** Closes the timed window and returns the CPU it saw outside this process. */
export async function closeWindow(): Promise<CpuWindow> {
  if (process.send) return (await request("close")).cpu!;
  return localMeter!.close();
}

/** Runs the child's main function, reports its result or error to the parent, and exits. */
export function childMain<T>(main: () => Promise<T>): void {
  main().then(
    (data) => {
      if (process.send) process.send({ kind: "result", data } satisfies ChildMessage, () => process.exit(0));
      else {
        console.log(JSON.stringify(data, null, 2));
        process.exit(0);
      }
    },
    (error: unknown) => {
      const e = error instanceof Error ? error : new Error(String(error));
      if (process.send) {
        process.send({ kind: "error", message: e.message, stack: e.stack } satisfies ChildMessage, () =>
          process.exit(1),
        );
      } else {
        console.error(e);
        process.exit(1);
      }
    },
  );
}

/**
 * CPU accounting from /proc (Linux), run by the orchestrating process so its own sampling never lands
 * in the measured process's CPU time.
 *
 * - Database CPU: the PostgreSQL backends of the bench database (their process title is
 *   `postgres: <cluster>: <user> <database> <client> <state>`; autovacuum workers name the database
 *   too). Backends are discovered at the start, while the window is open (every second) and at the end,
 *   and the last value seen of each is kept, so a backend that exits mid-window still counts up to its
 *   last sample. This is why the bench uses a dedicated database: other sessions' backends are not counted.
 * - Other load: whole-machine busy time (/proc/stat) minus the measured process, the bench database's
 *   backends and this process. On a shared machine that is the noise the numbers carry: other engineers'
 *   test suites, compilers, other databases' backends.
 *
 * Where /proc is missing (macOS), everything reads as NaN and the bench carries on.
 */
import { readdirSync, readFileSync } from "node:fs";
import { execSync } from "node:child_process";

let ticksPerSecond = 100;
try {
  ticksPerSecond = Number(execSync("getconf CLK_TCK", { encoding: "utf8" }).trim()) || 100;
} catch {
  // keep 100, the Linux default
}

/** utime + stime of a process in clock ticks, or undefined when it is gone. */
function processTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** Busy and total ticks of the whole machine (all cores). */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const busy = user! + nice! + system! + irq! + softirq! + (steal ?? 0);
    return { busy, total: busy + idle! + iowait! };
  } catch {
    return undefined;
  }
}

/** Pids of the backends of `database`. */
function backendPids(database: string): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return pids;
  }
  const needle = ` ${database} `;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (title.startsWith("postgres:") && title.includes(needle)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** What a window measured. */
export interface CpuWindow {
  /** CPU time of the bench database's backends, ms. */
  dbCpuMs: number;
  /** CPU time of everything else on the machine (not the measured process, not the bench database), ms. */
  otherCpuMs: number;
  /** Wall time of the window, ms. */
  wallMs: number;
  /** Cores on the machine. */
  cores: number;
}

/** CPU of a window, per job. */
export interface CpuPerJob {
  /** CPU of the measuring node process (user + system), µs per job. */
  nodeUs: number;
  /** CPU of the bench database's PostgreSQL backends, µs per job. */
  dbUs: number;
  /** Everything else the machine did meanwhile, as a share of its cores (the noise of a shared machine). */
  otherLoadPct: number;
}

/** A window's CPU and the measuring process's (`node`, from `process.cpuUsage(start)`) per job. */
export function perJob(cpu: CpuWindow, node: NodeJS.CpuUsage, jobs: number): CpuPerJob {
  return {
    nodeUs: (node.user + node.system) / jobs,
    dbUs: (cpu.dbCpuMs * 1000) / jobs,
    otherLoadPct: (100 * cpu.otherCpuMs) / (cpu.wallMs * cpu.cores),
  };
}

/** One measurement window over the bench database's backends and the machine. */
export class CpuWindowMeter {
  private readonly start = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private machine0: { busy: number; total: number } | undefined;
  private measured0: number | undefined;
  private self0 = process.cpuUsage();
  private t0 = performance.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly database: string,
    private readonly measuredPid: number | undefined,
  ) {}

  /** Opens the window. */
  open(): void {
    this.start.clear();
    this.last.clear();
    for (const pid of backendPids(this.database)) {
      const t = processTicks(pid);
      if (t !== undefined) {
        this.start.set(pid, t);
        this.last.set(pid, t);
      }
    }
    this.machine0 = machineTicks();
    this.measured0 = this.measuredPid === undefined ? undefined : processTicks(this.measuredPid);
    this.self0 = process.cpuUsage();
    this.t0 = performance.now();
    this.timer = setInterval(() => this.sample(), 1000);
    this.timer.unref();
  }

  private sample(): void {
    for (const pid of backendPids(this.database)) {
      const t = processTicks(pid);
      if (t === undefined) continue;
      if (!this.start.has(pid)) this.start.set(pid, 0); // born inside the window: all of its time counts
      this.last.set(pid, t);
    }
  }

  /** Closes the window and returns what it saw. */
  close(): CpuWindow {
    clearInterval(this.timer);
    this.sample();
    const wallMs = performance.now() - this.t0;
    const machine1 = machineTicks();
    const measured1 = this.measuredPid === undefined ? undefined : processTicks(this.measuredPid);
    const self = process.cpuUsage(this.self0);
    let dbTicks = 0;
    for (const [pid, t] of this.last) dbTicks += t - (this.start.get(pid) ?? 0);
    const msPerTick = 1000 / ticksPerSecond;
    const dbCpuMs = dbTicks * msPerTick;
    let otherCpuMs = NaN;
    if (this.machine0 && machine1) {
      const busyMs = (machine1.busy - this.machine0.busy) * msPerTick;
      const measuredMs =
        this.measured0 !== undefined && measured1 !== undefined
          ? (measured1 - this.measured0) * msPerTick
          : 0;
      otherCpuMs = Math.max(0, busyMs - measuredMs - dbCpuMs - (self.user + self.system) / 1000);
    }
    return { dbCpuMs: this.machine0 ? dbCpuMs : NaN, otherCpuMs, wallMs, cores: coresOnline() };
  }
}

function coresOnline(): number {
  try {
    return readFileSync("/proc/stat", "utf8")
      .split("\n")
      .filter((l) => /^cpu\d+ /.test(l)).length;
  } catch {
    return NaN;
  }
}

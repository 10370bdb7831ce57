/**
 * One process, one open of an embedded data directory. PGlite writes no `postmaster.pid`, so two PGlite
 * instances (two processes, or two opens in one) would run two backends over the same files and corrupt
 * them. The lock is a file beside the directory (`<dataDir>.lock`, not inside: initdb wants an empty
 * directory) created with `O_EXCL`, holding the owner's pid. A lock whose pid is no longer alive was left
 * by a crash and is taken over.
 *
 * Hand-written rather than proper-lockfile: the owner is on this host, so "is its pid alive" is exact,
 * whereas an mtime-refresh lock needs a timer and guesses staleness after a delay.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { PawlError } from "../../core/errors.js";

/** A held lock; `release()` is idempotent. */
export interface DataDirLock {
  /** The lock file's path. */
  readonly path: string;
  release(): void;
}

/**
 * Takes the lock of `dataDir`, creating its parent directory if needed. Synchronous, so createPawl can
 * refuse a second open before it returns.
 *
 * @throws PawlError `INVALID_CONFIG` when a live process (this one included) holds the directory.
 * @example
 * ```ts
 * const lock = lockDataDir("/srv/app/.pawl-data");
 * try { ... } finally { lock.release(); }
 * ```
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = `${dataDir}.lock`;
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
      return held(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = ownerOf(path);
    if (owner !== null && isAlive(owner)) {
      const who = owner === process.pid ? "this process already has it open" : `process ${owner} has it open`;
      throw new PawlError(
        "INVALID_CONFIG",
        `the embedded database ${dataDir} is in use: ${who}. An embedded database serves one process ` +
          "and one pawl instance: share that instance (or its pool), or move to a PostgreSQL server " +
          "(docs/embedded.md)",
      );
    }
    // Left by a process that died: take it over (a racing taker fails the O_EXCL retry and reads our pid).
    try {
      unlinkSync(path);
    } catch {
      // Another taker removed it first; the retry decides.
    }
  }
  throw new PawlError("INVALID_CONFIG", `could not lock the embedded database ${dataDir} (${path})`);
}

function held(path: string): DataDirLock {
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        unlinkSync(path);
      } catch {
        // Already gone (removed by hand): nothing to release.
      }
    },
  };
}

function ownerOf(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else; it is alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

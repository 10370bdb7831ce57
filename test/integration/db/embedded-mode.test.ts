/**
 * The embedded mode as an application meets it: a `pglite://` connection string opens and closes the
 * database with the pawl instance, a directory keeps its jobs across restarts and serves one open at a
 * time, and what cannot work on one in-process connection is refused at createPawl.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createPawl, PawlError, ValidationError } from "../../../src/index.js";
import { parseEmbeddedUrl } from "../../../src/db/embedded/embedded-url.js";
import { lockDataDir } from "../../../src/db/embedded/data-dir-lock.js";
import type { EmbeddedPool } from "../../../src/db/embedded/embedded-pool.js";
import { jobEvent } from "../../helpers/events.js";

/** Booting PGlite is CPU-bound (WebAssembly compile, initdb): seconds here, far more on a loaded runner. */
const bootTimeout = 180_000;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "pawl-embedded-test-"));
  dirs.push(d);
  return d;
}

/** A pid no process has: that of a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "0"]);
  return child.pid ?? 2 ** 22 + 1;
}

describe("pglite:// connection strings", () => {
  it("reads memory and directory locations, and refuses what it cannot read", () => {
    expect(parseEmbeddedUrl("pglite://memory")).toEqual({ kind: "memory" });
    expect(parseEmbeddedUrl("pglite:///srv/app/data")).toEqual({
      kind: "directory",
      dataDir: "/srv/app/data",
    });
    expect(parseEmbeddedUrl("pglite://./memory")).toEqual({
      kind: "directory",
      dataDir: join(process.cwd(), "memory"),
    });
    for (const bad of ["pglite://", "pglite://./data?sync=off", "pglite://a#b"]) {
      expect(() => createPawl({ connectionString: bad })).toThrow(ValidationError);
    }
  });

  it("refuses the postgres coordinator, by option or environment", () => {
    expect(() => createPawl({ connectionString: "pglite://memory", coordinator: "postgres" })).toThrow(
      /postgres coordinator needs a LISTEN connection of its own/,
    );
    const before = process.env.PAWL_COORDINATOR;
    process.env.PAWL_COORDINATOR = "postgres";
    try {
      expect(() => createPawl({ connectionString: "pglite://memory" })).toThrow(ValidationError);
    } finally {
      if (before === undefined) delete process.env.PAWL_COORDINATOR;
      else process.env.PAWL_COORDINATOR = before;
    }
  });
});

describe("a directory database", () => {
  it("keeps its jobs across a restart, and serves one open at a time", { timeout: bootTimeout }, async () => {
    const url = `pglite://${join(tempDir(), "data")}`;
    const first = createPawl({ connectionString: url, concurrency: 2 });
    await first.migrate();
    first.register("kept", async (p: { n: number }) => p.n + 1);
    await first.start();
    const jobSucceeded = jobEvent(first.events, "job:succeeded");
    const ran = await first.enqueue("kept", { n: 1 });
    await jobSucceeded.for(ran.id);
    const waiting = await first.enqueue("later", { n: 2 }, { delayMs: 3_600_000 });

    // A second open of the same directory, in this process or another, would corrupt it.
    const second = (() => {
      try {
        return createPawl({ connectionString: url });
      } catch (error) {
        return error;
      }
    })();
    expect(second).toBeInstanceOf(PawlError);
    expect((second as PawlError).message).toMatch(/is in use: this process already has it open/);
    await first.close();

    const again = createPawl({ connectionString: url });
    try {
      expect(await again.getJob(ran.id)).toMatchObject({ status: "SUCCEEDED", result: 2 });
      expect(await again.getJob(waiting.id)).toMatchObject({ status: "PENDING", payload: { n: 2 } });
      expect((await again.migrate()).applied).toEqual([]);
    } finally {
      await again.close();
    }
  });

  it("takes over the lock a dead process left, refuses one a live process holds, and frees it on release", () => {
    const dataDir = join(tempDir(), "data");
    writeFileSync(`${dataDir}.lock`, String(deadPid()));
    const lock = lockDataDir(dataDir);
    expect(readFileSync(lock.path, "utf8")).toBe(String(process.pid));
    expect(() => lockDataDir(dataDir)).toThrow(/this process already has it open/);
    lock.release();
    expect(existsSync(lock.path)).toBe(false);

    writeFileSync(`${dataDir}.lock`, String(process.ppid));
    expect(() => createPawl({ connectionString: `pglite://${dataDir}` })).toThrow(
      new RegExp(`process ${process.ppid} has it open`),
    );
  });
});

describe("a memory database opened by createPawl", () => {
  it("runs jobs, and closing pawl closes the database", { timeout: bootTimeout }, async () => {
    const pawl = createPawl({ connectionString: "pglite://memory", maxConnections: 50 });
    await pawl.migrate();
    pawl.register("once", async () => "ok");
    await pawl.start();
    const jobSucceeded = jobEvent(pawl.events, "job:succeeded");
    const job = await pawl.enqueue("once", {});
    await jobSucceeded.for(job.id);
    // pawl's own pool (internal): an embedded pool, whoever brings it, refuses the postgres coordinator.
    const pool = (pawl as unknown as { pool: EmbeddedPool }).pool;
    expect(() => createPawl({ pool, coordinator: "postgresql" })).toThrow(ValidationError);
    expect(createPawl({ pool, coordinator: "none" }).config.coordinator).toBe("none");
    expect(createPawl({ pool }).config.coordinator).toBe("in-memory");
    await pawl.close();
    expect(pool.ended).toBe(true);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { ManualClock } from "../../../src/core/clock.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";
import { CursorClaimer, type CursorClaimerOptions } from "../../../src/store/claim/claim-cursor.js";
import { pickWindow } from "../../../src/store/claim/claim-cursor-state.js";
import type { WindowRow } from "../../../src/store/claim/claim-positions.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
/** Setup and assertions go through `raw`; claimers use `store`, whose pool records every statement. */
let raw: PostgresJobStore;
let store: PostgresJobStore;
const sent: string[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ccur"));
  raw = new JobStore(pool, schema);
  const recording = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === "query") {
        return (config: pg.QueryConfig | string, values?: unknown[]) => {
          sent.push(typeof config === "string" ? config : (config.name ?? config.text));
          return target.query(config, values);
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  store = new JobStore(recording, schema);
  T0 = Math.floor((await raw.databaseTime()).getTime() / 1000) * 1000 - 86_400_000;
});
afterAll(() => cleanup());

/** The statements sent since the last call, by short name (cursor_seek_light, cursor_floored_light, ...). */
function statements(): string[] {
  const out = sent.splice(0).map((n) => n.replace(`pawl_${schema}_`, ""));
  return out;
}

/** A whole second a day before the database's time: rows scheduled around it are due. */
let T0 = 0;
const job = (priority: number, runAt: number, type = "a") =>
  buildNewJob(type, {}, { priority, runAt: new Date(runAt) }, undefined, 1024);

async function reset(): Promise<void> {
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
  sent.length = 0;
}

function claimer(clock: ManualClock, extra: Partial<CursorClaimerOptions> = {}): CursorClaimer {
  return new CursorClaimer({
    store,
    nodeId: "n",
    boostIntervalMs: 0,
    withPayload: false,
    clock,
    random: () => 0,
    ...extra,
  });
}

const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);

describe("claim cursors", () => {
  it("claims from several priority levels with one seek statement", async () => {
    await reset();
    const [a30, b30, a20, b20, a10, b10] = await raw.enqueue([
      job(30, T0 - 6000),
      job(30, T0 - 5000),
      job(20, T0 - 4000),
      job(20, T0 - 3000),
      job(10, T0 - 2000),
      job(10, T0 - 1000),
    ]);
    const c = claimer(new ManualClock(0));
    const first = await c.poll(1, ["a"]);
    expect(first.kind).toBe("full");
    expect(ids(first.jobs)).toEqual([a30?.id]);
    expect(statements()).toEqual(["cursor_full_light"]);
    // Level 30 is past its claimed row; 20 and 10 (outranked) sit just before their first candidates.
    expect((c.describe().cursors as { priority: number }[]).map((x) => x.priority)).toEqual([30, 20, 10]);
    const second = await c.poll(10, ["a"]);
    expect(second.kind).toBe("seek");
    expect(statements()).toEqual(["cursor_seek_light"]);
    expect(ids(second.jobs)).toEqual([b30, a20, b20, a10, b10].map((j) => j?.id));
  });

  it("keeps microsecond positions: rows sharing a millisecond are neither skipped nor repeated", async () => {
    await reset();
    const rows = await raw.enqueue(Array.from({ length: 6 }, () => job(10, T0)));
    // Same millisecond, different microseconds, in the reverse of id order.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET scheduled_time = $1::timestamptz + (1000 - id) * interval '1 microsecond'`,
      [new Date(T0)],
    );
    const c = claimer(new ManualClock(0));
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) seen.push(...ids((await c.poll(1, ["a"])).jobs));
    expect(seen).toEqual(rows.map((r) => r.id).reverse());
    expect(c.state.counters.passes.seek).toBe(5);
  });

  it("clears the cursor of a level whose seek comes back empty and sends nothing until discovery is due", async () => {
    await reset();
    await raw.enqueue([job(10, T0 - 2000), job(10, T0 - 1000)]);
    const clock = new ManualClock(0);
    const c = claimer(clock);
    expect((await c.poll(1, ["a"])).kind).toBe("full");
    expect((await c.poll(5, ["a"])).jobs).toHaveLength(1);
    statements();
    const empty = await c.poll(5, ["a"]);
    expect([empty.kind, empty.jobs.length, statements()]).toEqual(["seek", 0, ["cursor_seek_light"]]);
    expect(c.describe().cursors).toEqual([]);
    // New work without a wakeup: polls stay silent until the floored pass is due.
    const [fresh] = await raw.enqueue([job(10, T0)]);
    for (let i = 0; i < 5; i++) {
      clock.advance(100);
      expect((await c.poll(5, ["a"])).kind).toBe("skip");
    }
    expect(statements()).toEqual([]);
    expect(c.state.counters.skippedPolls).toBe(5);
    clock.advance(500); // t = 1000: the floored pass is due
    const found = await c.poll(5, ["a"]);
    expect(found.kind).toBe("floored");
    expect(ids(found.jobs)).toEqual([fresh?.id]);
    expect(found.statements).toBe(1);
    expect(statements()).toEqual(["cursor_floored_light"]);
  });

  it("runs the floored pass at once after a wakeup", async () => {
    await reset();
    const clock = new ManualClock(0);
    const c = claimer(clock);
    expect((await c.poll(5, ["a"])).kind).toBe("full");
    expect((await c.poll(5, ["a"])).kind).toBe("skip");
    const [fresh] = await raw.enqueue([job(10, T0)]);
    c.onWakeup();
    const woke = await c.poll(5, ["a"]);
    expect([woke.kind, ids(woke.jobs)]).toEqual(["floored", [fresh?.id]]);
  });

  it("sends each statement's meta columns (window, heads, levels) on one row, not on every claimed job's", async () => {
    await reset();
    await raw.enqueue(Array.from({ length: 40 }, (_, i) => job(10, T0 + i)));
    // Record the rows each statement returned, through a pool that keeps them.
    const results: pg.QueryResult[] = [];
    const keeping = new Proxy(pool, {
      get(target, prop, receiver) {
        if (prop === "query") {
          return async (config: pg.QueryConfig, values?: unknown[]) => {
            const r = await target.query(config, values);
            results.push(r);
            return r;
          };
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const c = new CursorClaimer({
      store: new JobStore(keeping, schema),
      nodeId: "n",
      boostIntervalMs: 0,
      withPayload: false,
      clock: new ManualClock(0),
      random: () => 0,
    });
    const full = await c.poll(10, ["a"]);
    c.onWakeup();
    const floored = await c.poll(10, ["a"]);
    expect([full.kind, full.jobs.length, floored.kind, floored.jobs.length]).toEqual([
      "full",
      10,
      "floored",
      10,
    ]);
    const [fullRows, flooredRows] = results.map((r) => r.rows as Record<string, unknown>[]);
    expect(fullRows).toHaveLength(10);
    expect(fullRows!.filter((r) => r.heads != null || r.levels != null || r.now_us != null)).toHaveLength(1);
    expect(flooredRows).toHaveLength(10);
    expect(flooredRows!.filter((r) => r.window_rows != null || r.heads != null)).toHaveLength(1);
    // The window (the 30 rows left, as read before this claim) still reaches the cursors.
    const lastClaimed = flooredRows!.map((r) => BigInt(String(r.id))).reduce((a, b) => (b > a ? b : a));
    expect(c.state.highWater).toBe(lastClaimed + 20n);
  });

  it("claims the floored pass in one statement, picking what pickWindow picks (age boost across levels)", async () => {
    await reset();
    const interval = 15 * 60_000;
    const c = claimer(new ManualClock(0), {
      boostIntervalMs: interval,
      window: 10,
      databaseNow: () => new Date(T0),
    });
    // The boot full pass on an empty table: no known level, no cursor, so the claim is the window's picks.
    expect((await c.poll(5, ["a"])).kind).toBe("full");
    // Whole milliseconds (the model's resolution) and ages on both sides of boost boundaries, so the boost
    // reorders across levels: 5 waiting 10 intervals (15) beats 12 fresh; 8 waiting 3 (11) ties 9 waiting 2.
    const spec: [number, number][] = [
      [12, 0],
      [5, 10 * interval],
      [8, 3 * interval],
      [9, 2 * interval],
      [10, interval - 1],
      [10, interval],
      [0, 14 * interval + 7],
      [11, 0],
      [3, 6 * interval - 1],
      [9, 2 * interval],
      [50, 0], // the 11th row: past the oldest 10, but the newest, which the window reads too (issue 27)
    ];
    const rows = await raw.enqueue(spec.map(([p, age]) => job(p, T0 - age)));
    const window: WindowRow[] = rows.map((r, i) => ({
      id: BigInt(r.id),
      priority: spec[i]![0],
      us: BigInt(T0 - spec[i]![1]) * 1000n,
    }));
    const expected = pickWindow(window, 6, BigInt(T0) * 1000n, interval).map((r) => r.id.toString());
    // 50, then 15, 14 (boosted), 12
    expect(expected.slice(0, 4)).toEqual([rows[10]?.id, rows[1]?.id, rows[6]?.id, rows[0]?.id]);
    c.onWakeup();
    statements();
    const r = await c.poll(6, ["a"]);
    expect([r.kind, r.statements, statements()]).toEqual(["floored", 1, ["cursor_floored_light"]]);
    expect(ids(r.jobs)).toEqual(expected);
    // The window reached the bookkeeping: every level in it is known, its highest id observed.
    expect([...c.state.known.keys()].sort((a, b) => a - b)).toEqual([0, 3, 5, 8, 9, 10, 11, 12, 50]);
    expect(c.state.highWater).toBe(BigInt(rows[10]!.id));
    // Window rows were left uncovered, so the floored pass stays due and takes the rest next.
    expect(c.state.discoveryDue).toBe(true);
    const rest = await c.poll(10, ["a"]);
    expect(rest.kind).toBe("floored");
    expect(ids(rest.jobs).sort()).toEqual(
      rows
        .map((r) => r.id)
        .filter((id) => !expected.includes(id))
        .sort(),
    );
  });

  it("finds a higher-priority arrival below the cursors at the next discovery, ahead of the backlog", async () => {
    await reset();
    await raw.enqueue(Array.from({ length: 20 }, (_, i) => job(10, T0 - 60_000 + i)));
    const clock = new ManualClock(0);
    const c = claimer(clock);
    expect((await c.poll(5, ["a"])).kind).toBe("full");
    // A new priority level, and a same-level row scheduled before the cursor (an old runAt).
    const [urgent, early] = await raw.enqueue([job(50, T0), job(10, T0 - 3_600_000)]);
    const seek = await c.poll(5, ["a"]);
    expect(seek.kind).toBe("seek");
    expect(seek.jobs.map((j) => j.priority)).toEqual([10, 10, 10, 10, 10]);
    expect(ids(seek.jobs)).not.toContain(early?.id);
    clock.advance(1000);
    const discovery = await c.poll(3, ["a"]);
    expect(discovery.kind).toBe("floored");
    // Claim order: the new level first, then the early row (older than every row of its level), then the backlog.
    expect(ids(discovery.jobs).slice(0, 2)).toEqual([urgent?.id, early?.id]);
    expect(discovery.jobs[2]?.priority).toBe(10);
  });

  it("heals an overshoot (a row back to PENDING below the floor and the cursor) with the full pass", async () => {
    await reset();
    const rows = await raw.enqueue(Array.from({ length: 10 }, (_, i) => job(10, T0 - 3_600_000 + i)));
    const clock = new ManualClock(0);
    const c = claimer(clock);
    const first = await c.poll(4, ["a"]);
    expect(ids(first.jobs)).toEqual(rows.slice(0, 4).map((r) => r.id));
    // A rolled-back claim (or a peer's lost claim): the second row is PENDING again, below the cursor,
    // at or below the id floor and older than the time floor.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET picked_by = NULL WHERE id = $1`, [
      rows[1]?.id,
    ]);
    const seen: string[] = [];
    for (let t = 0; t < 9; t++) {
      clock.advance(1000);
      const r = await c.poll(10, ["a"]);
      expect(r.kind).not.toBe("full");
      seen.push(...ids(r.jobs));
    }
    expect(seen).toEqual(rows.slice(4).map((r) => r.id));
    clock.advance(1000); // t = 10,000: the full pass
    const healed = await c.poll(10, ["a"]);
    expect([healed.kind, ids(healed.jobs)]).toEqual(["full", [rows[1]?.id]]);
    // A caller that knows it made such rows PENDING (a pause resumed) can ask for the full pass at once.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET picked_by = NULL WHERE id = $1`, [
      rows[2]?.id,
    ]);
    c.requestFullPass();
    const asked = await c.poll(10, ["a"]);
    expect([asked.kind, ids(asked.jobs)]).toEqual(["full", [rows[2]?.id]]);
  });

  it("finds a retried job (an old id made due again) through the time floor without a full pass", async () => {
    await reset();
    const rows = await raw.enqueue(Array.from({ length: 3 }, (_, i) => job(10, T0 + i)));
    const clock = new ManualClock(0);
    const c = claimer(clock);
    expect((await c.poll(10, ["a"])).jobs).toHaveLength(3);
    expect((await c.poll(10, ["a"])).jobs).toHaveLength(0); // the empty seek drops the cursor
    await raw.retry("n", [
      { id: rows[0]!.id, delayMs: 0, error: { attempt: 1, name: "Error", message: "x" } },
    ]);
    clock.advance(1000);
    const r = await c.poll(10, ["a"]);
    expect([r.kind, ids(r.jobs)]).toEqual(["floored", [rows[0]?.id]]);
  });

  it("backs the full pass off while idle, so an overshoot waits longer, and resets it on a claim", async () => {
    await reset();
    const clock = new ManualClock(0);
    const c = claimer(clock, { fullDiscoveryMaxMs: 40_000 });
    const interval = () => c.describe().fullDiscoveryIntervalMs;
    const nextFull = () => c.describe().nextFullDiscoveryAt;
    // Empty full passes: 10 s -> 20 s -> 40 s (the cap here).
    expect((await c.poll(5, ["a"])).kind).toBe("full");
    expect([interval(), nextFull()]).toEqual([20_000, 20_000]);
    clock.advance(20_000);
    expect((await c.poll(5, ["a"])).kind).toBe("full");
    expect([interval(), nextFull()]).toEqual([40_000, 60_000]);
    // A peer holds a row (RUNNING) at the next full pass, which moves the id floor past it.
    const [stale] = await raw.enqueue([job(10, T0 - 3_600_000)]);
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET picked_by = 'peer' WHERE id = $1`, [
      stale?.id,
    ]);
    clock.advance(40_000);
    expect((await c.poll(5, ["a"])).kind).toBe("full"); // t = 60 s
    expect([interval(), nextFull()]).toEqual([40_000, 100_000]);
    // The row comes back to PENDING under its old id and scheduled time, without a wakeup (another
    // process's orphan recovery): below both floors, so the floored passes cannot see it, and the idle
    // node's backed-off full pass finds it up to 40 s later, not within the base 10 s.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET picked_by = NULL WHERE id = $1`, [
      stale?.id,
    ]);
    for (let i = 0; i < 13; i++) {
      clock.advance(3000); // t = 63 s ... 99 s
      const r = await c.poll(5, ["a"]);
      expect([r.kind, r.jobs]).toEqual(["floored", []]);
    }
    clock.advance(1000); // t = 100 s
    const healed = await c.poll(5, ["a"]);
    expect([healed.kind, ids(healed.jobs)]).toEqual(["full", [stale?.id]]);
    expect([interval(), nextFull()]).toEqual([10_000, 110_000]);
    // A wakeup alone does not reset the backed-off cadence; the work claimed after it does.
    clock.advance(10_000);
    expect((await c.poll(5, ["a"])).kind).toBe("full"); // t = 110 s, empty
    expect([interval(), nextFull()]).toEqual([20_000, 130_000]);
    c.onWakeup();
    expect((await c.poll(5, ["a"])).kind).toBe("floored");
    expect([interval(), nextFull()]).toEqual([20_000, 130_000]);
    const [fresh] = await raw.enqueue([job(10, T0)]);
    c.onWakeup();
    const woke = await c.poll(5, ["a"]);
    expect([woke.kind, ids(woke.jobs)]).toEqual(["floored", [fresh?.id]]);
    expect([interval(), nextFull()]).toEqual([10_000, 120_000]);
  });

  it.each([
    ["one interval back: the boost ties the levels and the older row wins", 0, "old", 1],
    ["one millisecond short: the higher raw priority wins", 1, "fresh", 0],
  ])("honours the age boost across levels in a seek (%s)", async (_name, shortMs, winner, boost) => {
    await reset();
    const interval = 15 * 60_000;
    const [seed, fresh, old] = await raw.enqueue([
      job(11, T0 - 20_000),
      job(11, T0),
      job(10, T0 - interval + shortMs),
    ]);
    let now = new Date(T0 - 1);
    const c = claimer(new ManualClock(0), { boostIntervalMs: interval, databaseNow: () => now });
    // At T0 - 1 ms the seed (11) beats the old row (10, boost 0) and the fresh row is not due yet.
    const first = await c.poll(1, ["a"]);
    expect([first.kind, ids(first.jobs)]).toEqual(["full", [seed?.id]]);
    now = new Date(T0);
    const second = await c.poll(1, ["a"]);
    expect(second.kind).toBe("seek");
    expect(second.jobs.map((j) => [j.id, j.boost])).toEqual([[(winner === "old" ? old : fresh)?.id, boost]]);
  });

  it("reports its cursors, floors, schedule and counters", async () => {
    await reset();
    await raw.enqueue([job(10, T0), job(20, T0)]);
    const c = claimer(new ManualClock(0));
    await c.poll(1, ["a"]);
    const d = c.describe();
    expect(d).toMatchObject({
      kind: "cursors",
      knownLevels: [20, 10],
      nextDiscoveryAt: 1000,
      nextFullDiscoveryAt: 10_000,
      fullDiscoveryIntervalMs: 10_000, // the boot pass claimed: no backoff
      fullDiscoveryMaxMs: 60_000,
      counters: {
        queries: 1,
        skippedPolls: 0,
        passes: { full: 1, floored: 0, seek: 0, skip: 0 },
        claimed: 1,
      },
    });
    expect((d.cursors as { scheduledTime: string }[])[0]?.scheduledTime).toBe(
      new Date(T0).toISOString().replace(".000Z", ".000000Z"),
    );
    expect((d.floor as { id: string }).id).toMatch(/^\d+$/);
  });
});

/**
 * The outcome writer's defence in depth, against the real PostgreSQL: a batch that PostgreSQL refuses
 * because of one value is bisected, the good outcomes land, and the refused one is written without the
 * handler's values and reported. The bad values are fed to the writer directly, past the serialisation
 * that would normally catch them. On the code before the fix the writer retried the batch forever.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { type PawlClient } from "../../../src/index.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { systemClock } from "../../../src/core/clock.js";
import { silentLogger } from "../../../src/core/logger.js";
import { OutcomeWriter } from "../../../src/node/outcome-writer.js";
import { leasedJobs } from "../../helpers/leased-jobs.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let store: JobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("poisonw"));
  pawl = testPawl(schema);
  store = new JobStore(pool, schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

/** `n` jobs of `type` leased to the writer's node. */
const claim = (type: string, n: number): Promise<string[]> => leasedJobs(store, type, n, "w1");

/** A done callback and the promise of its answer; rejects if the writer never answers. */
function answer(): { done: (ok: boolean) => void; landed: Promise<boolean> } {
  let done!: (ok: boolean) => void;
  const landed = new Promise<boolean>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the writer never answered")), 10_000);
    done = (ok) => {
      clearTimeout(timer);
      resolve(ok);
    };
  });
  return { done, landed };
}

describe("the outcome writer isolates a refused value", () => {
  it("lands the good outcomes of a refused batch and stores the refused one without its values", async () => {
    const errors: unknown[] = [];
    const writer = new OutcomeWriter(store, "w1", systemClock, silentLogger, 1, (e) => errors.push(e));
    const done = await claim("w-complete", 9);
    const retried = await claim("w-retry", 5);
    const handed = await claim("w-reschedule", 3);
    const answers: Promise<boolean>[] = [];
    // A NUL escape in the middle of a completion batch: PostgreSQL refuses the whole statement (22P05).
    done.forEach((id, i) => {
      const a = answer();
      answers.push(a.landed);
      writer.complete({ id, resultJson: i === 4 ? '"a\\u0000b"' : JSON.stringify({ i }) }, a.done);
    });
    // A delay beyond bigint in a retry and a reschedule batch (22003).
    retried.forEach((id, i) => {
      const a = answer();
      answers.push(a.landed);
      writer.retry(
        { id, delayMs: i === 0 ? 1e300 : 0, error: { attempt: 1, name: "Error", message: `failure ${i}` } },
        a.done,
      );
    });
    handed.forEach((id, i) => {
      const a = answer();
      answers.push(a.landed);
      writer.reschedule({ id, delayMs: i === 2 ? 1e300 : 0 }, a.done);
    });
    expect(await Promise.all(answers)).toEqual(answers.map(() => true));
    await writer.drain();

    const jobs = await Promise.all(done.map((id) => pawl.getJob(id)));
    expect(jobs.map((j) => j?.status)).toEqual(done.map(() => "SUCCEEDED"));
    expect(jobs.map((j) => j?.result)).toEqual(done.map((_, i) => (i === 4 ? null : { i })));

    const retries = await Promise.all(retried.map((id) => pawl.getJob(id)));
    expect(retries.map((j) => j?.status)).toEqual(retried.map(() => "PENDING"));
    expect(retries.map((j) => j?.lastError)).toEqual([
      "the failure's error record could not be stored",
      "failure 1",
      "failure 2",
      "failure 3",
      "failure 4",
    ]);
    // The refused delay was clamped to the longest an outcome stores, not dropped.
    expect(retries[0]!.scheduledTime.getUTCFullYear()).toBeGreaterThan(new Date().getUTCFullYear() + 50);

    const handedBack = await Promise.all(handed.map((id) => pawl.getJob(id)));
    expect(handedBack.map((j) => j?.status)).toEqual(["PENDING", "PENDING", "PENDING"]);

    // One report per refused outcome, naming its job; nothing is left RUNNING.
    const reported = errors.map((e) => (e as Error).message);
    expect(reported).toHaveLength(3);
    expect(reported.find((m) => m.includes(`job ${done[4]}`))).toMatch(/refused its complete outcome/);
    expect(reported.find((m) => m.includes(`job ${retried[0]}`))).toMatch(/refused its retry outcome/);
    expect(reported.find((m) => m.includes(`job ${handed[2]}`))).toMatch(/refused its reschedule outcome/);
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING'`,
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it("keeps writing later batches after a refused one", async () => {
    const writer = new OutcomeWriter(store, "w1", systemClock, silentLogger, 1, () => {});
    const [bad] = await claim("w-later", 1);
    const first = answer();
    writer.complete({ id: bad!, resultJson: '{"k\\u0000":1}' }, first.done);
    expect(await first.landed).toBe(true);
    const later = await claim("w-later", 2);
    const answers = later.map((id) => {
      const a = answer();
      writer.complete({ id, resultJson: '"fine"' }, a.done);
      return a.landed;
    });
    expect(await Promise.all(answers)).toEqual([true, true]);
    expect((await pawl.getJob(later[1]!))?.result).toBe("fine");
  });
});

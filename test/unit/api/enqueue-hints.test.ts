/**
 * When an enqueue wakes the other nodes (src/api/enqueue-hints.ts): critical priority, or a single job due
 * now; the hint carries the highest priority and the type when all jobs share one.
 */
import { describe, expect, it } from "vitest";
import {
  bareClientWakeup,
  hintJobOfNew,
  hintJobOfRow,
  urgentHint,
  type HintJob,
} from "../../../src/api/enqueue-hints.js";
import { decodeHint } from "../../../coordinators/hint-codec.js";
import type { NewJob } from "../../../src/input/enqueue-input.js";
import { newJob } from "../../helpers/new-job.js";

const job = (type: string, priority: number, due: boolean): HintJob => ({ type, priority, due });

describe("urgentHint", () => {
  it.each<[string, HintJob[], ReturnType<typeof urgentHint>]>([
    ["nothing enqueued", [], null],
    ["one normal job due now", [job("mail", 10, true)], { priority: 10, source: "n", target: "mail" }],
    ["one normal job for later", [job("mail", 10, false)], null],
    [
      "two normal jobs due now (a batch waits for polling)",
      [job("mail", 10, true), job("mail", 10, true)],
      null,
    ],
    ["a critical job for later", [job("mail", 30, false)], { priority: 30, source: "n", target: "mail" }],
    [
      "a batch with one critical job: the highest priority, no single target",
      [job("mail", 0, true), job("sms", 30, false)],
      { priority: 30, source: "n" },
    ],
    [
      "a critical batch of one type keeps its target",
      [job("sms", 30, true), job("sms", 50, true)],
      { priority: 50, source: "n", target: "sms" },
    ],
  ])("%s", (_label, jobs, expected) => {
    expect(urgentHint(jobs, "n")).toEqual(expected);
  });

  it.each<[string, (boolean | undefined)[], boolean]>([
    ["every job known to carry no key", [false, false], true],
    ["one job with a key", [false, true], false],
    ["one job not known (an announced row)", [false, undefined], false],
  ])("says unkeyed only for %s", (_label, keyed, unkeyed) => {
    const jobs = keyed.map((k): HintJob => ({
      ...job("mail", 30, true),
      ...(k === undefined ? {} : { keyed: k }),
    }));
    expect(urgentHint(jobs, "n")?.unkeyed === true).toBe(unkeyed);
  });

  it("knows a new job's key, and a row's only from the caller", () => {
    expect(hintJobOfNew(newJob({ concurrencyKey: "acct-1" }), 0).keyed).toBe(true);
    expect(hintJobOfNew(newJob({ concurrencyKey: null }), 0).keyed).toBe(false);
    expect(hintJobOfNew(newJob({}), 0).keyed).toBe(false);
    const row = { type: "t", priority: 10, scheduledTime: new Date(0) };
    expect(hintJobOfRow(row, 0).keyed).toBeUndefined();
    expect(hintJobOfRow(row, 0, false).keyed).toBe(false);
  });
});

describe("due now", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");
  const dueJob = (delayMs: number, runAt: Date | null): NewJob => newJob({ runAt, delayMs, maxAttempts: 3 });

  it.each<[string, NewJob, boolean]>([
    ["no delay", dueJob(0, null), true],
    ["a delay within the 5 ms slack", dueJob(5, null), true],
    ["a longer delay", dueJob(6, null), false],
    ["runAt now", dueJob(0, new Date(now)), true],
    ["runAt 5 ms ahead", dueJob(0, new Date(now + 5)), true],
    ["runAt later", dueJob(0, new Date(now + 6)), false],
  ])("before the insert: %s", (_label, j, due) => {
    expect(hintJobOfNew(j, now).due).toBe(due);
  });

  it.each<[string, number, boolean]>([
    ["scheduled in the past", now - 1000, true],
    ["scheduled within the slack", now + 5, true],
    ["scheduled later", now + 6, false],
  ])("after the insert: %s", (_label, at, due) => {
    expect(hintJobOfRow({ type: "t", priority: 10, scheduledTime: new Date(at) }, now).due).toBe(due);
  });
});

describe("bareClientWakeup", () => {
  const now = 1_000_000;
  it.each<[string, unknown, NewJob[], boolean]>([
    ["auto (the default), one job due now", "auto", [newJob()], true],
    ["postgres, one job due now", "postgres", [newJob()], true],
    ["Postgres in any case", " PostgreSQL ", [newJob()], true],
    ["auto, a job for later", "auto", [newJob({ delayMs: 60_000 })], false],
    ["auto, a batch of normal jobs", "auto", [newJob(), newJob()], false],
    ["auto, a critical batch", "auto", [newJob(), newJob({ priority: 30 })], true],
    ["none", "none", [newJob()], false],
    ["postgres on another database (its nodes LISTEN there)", "postgres://other/db", [newJob()], false],
    ["amqp", "amqp://mq", [newJob()], false],
    ["a coordinator instance", {}, [newJob()], false],
  ])("%s: folds a notify = %s", (_name, coordinator, jobs, folds) => {
    const notify = bareClientWakeup(coordinator, "jobs", jobs, "web-1", now);
    if (!folds) {
      expect(notify).toBeUndefined();
      return;
    }
    expect(notify?.channel).toBe("pawl_jobs_wakeup");
    expect(decodeHint(notify!.payload)).toMatchObject({ source: "web-1" });
  });
});

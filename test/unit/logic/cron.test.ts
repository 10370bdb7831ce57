import { afterEach, describe, expect, it } from "vitest";
import { thrown } from "../../helpers/thrown.js";
import { nextFire, planFire, validateCron } from "../../../src/logic/cron.js";
import type { MissedFirePolicy } from "../../../src/logic/cron.js";

/** "2024-01-01 03:00[:ss.mmm]" in UTC, to ms. */
const at = (utc: string): number => Date.parse(`${utc.replace(" ", "T")}Z`);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

describe("validateCron", () => {
  it.each([
    { expression: "0 3 * * *", tz: undefined },
    { expression: "*/5 * * * *", tz: "UTC" },
    { expression: "0 3 * * *", tz: "Europe/Paris" },
    { expression: "0 9 * * MON-FRI", tz: "America/New_York" },
    { expression: "@daily", tz: undefined },
    { expression: "0 0 29 2 *", tz: undefined }, // leap days only, but it does fire
    { expression: "30 0 3 * * *", tz: undefined }, // six fields: leading seconds
  ])("accepts $expression in $tz", ({ expression, tz }) => {
    expect(() => validateCron(expression, tz)).not.toThrow();
  });

  it.each([
    { expression: "", fragment: "non-empty" },
    { expression: "   ", fragment: "non-empty" },
    { expression: "nope", fragment: '"nope"' },
    { expression: "* * * *", fragment: '"* * * *"' },
    { expression: "61 * * * *", fragment: "minute: 61" },
    { expression: "0 25 * * *", fragment: "hour: 25" },
    { expression: "*/0 * * * *", fragment: "stepping" },
    { expression: "0 0 * * MON-", fragment: '"0 0 * * MON-"' },
    { expression: "* * * * * * *", fragment: "7 parts" }, // years are not supported
    { expression: "@reboot", fragment: "@reboot" },
    { expression: "0 0 30 2 *", fragment: "never fires" },
  ])("rejects $expression", ({ expression, fragment }) => {
    const error = thrown(() => validateCron(expression));
    expect(error.code).toBe("INVALID_CRON");
    expect(error.message).toContain(fragment);
  });

  it.each(["Mars/Olympus", "Europe/Pariss", "", "+01:00"])("rejects the time zone %j", (tz) => {
    const error = thrown(() => validateCron("0 3 * * *", tz));
    expect(error.code).toBe("INVALID_CRON");
    expect(error.message).toContain(`unknown time zone ${JSON.stringify(tz)}`);
  });
});

describe("nextFire", () => {
  // [why, expression, zone, after (UTC), next fire (UTC)]
  it.each([
    ["later the same day", "0 3 * * *", "UTC", "2024-01-01 00:00", "2024-01-01 03:00"],
    ["strictly after: exactly at a fire", "0 3 * * *", "UTC", "2024-01-01 03:00", "2024-01-02 03:00"],
    ["1 ms before a fire", "0 3 * * *", "UTC", "2024-01-01 02:59:59.999", "2024-01-01 03:00"],
    ["1 ms after a fire", "0 3 * * *", "UTC", "2024-01-01 03:00:00.001", "2024-01-02 03:00"],
    ["Paris in winter (UTC+1)", "0 3 * * *", "Europe/Paris", "2024-01-01 00:00", "2024-01-01 02:00"],
    ["Paris in summer (UTC+2)", "0 3 * * *", "Europe/Paris", "2024-07-01 00:00", "2024-07-01 01:00"],
    ["Paris spring forward: 23 h later", "0 3 * * *", "Europe/Paris", "2024-03-30 02:00", "2024-03-31 01:00"],
    ["Paris fall back: 25 h later", "0 3 * * *", "Europe/Paris", "2024-10-26 01:00", "2024-10-27 02:00"],
    [
      "fixed time in the gap runs after it",
      "30 2 * * *",
      "Europe/Paris",
      "2024-03-30 12:00",
      "2024-03-31 01:00",
    ],
    [
      "fixed time repeated: first occurrence",
      "30 2 * * *",
      "Europe/Paris",
      "2024-10-26 12:00",
      "2024-10-27 00:30",
    ],
    ["fixed time repeated: runs once", "30 2 * * *", "Europe/Paris", "2024-10-27 00:30", "2024-10-28 01:30"],
    ["every 5 minutes", "*/5 * * * *", "UTC", "2024-01-01 00:00", "2024-01-01 00:05"],
    ["every 5 minutes, mid-slot", "*/5 * * * *", "UTC", "2024-01-01 00:03:17.250", "2024-01-01 00:05"],
    [
      "every 5 minutes, local midnight",
      "*/5 * * * *",
      "Europe/Paris",
      "2024-01-01 22:58",
      "2024-01-01 23:00",
    ],
    ["seconds field", "30 * * * * *", "UTC", "2024-01-01 00:00", "2024-01-01 00:00:30"],
    ["never-firing expression", "0 0 30 2 *", "UTC", "2024-01-01 00:00", null],
  ] as [string, string, string, string, string | null][])("%s", (_why, expr, tz, after, next) => {
    expect(iso(nextFire(expr, at(after), tz))).toBe(next === null ? null : iso(at(next)));
  });

  // [why, start (UTC), fires of */30 in Europe/Paris (UTC)]
  it.each([
    [
      "fall back: 02:00 and 02:30 local run twice",
      "2024-10-26 23:50",
      ["2024-10-27 00:00", "2024-10-27 00:30", "2024-10-27 01:00", "2024-10-27 01:30", "2024-10-27 02:00"],
    ],
    [
      "spring forward: 02:00 and 02:30 local do not exist",
      "2024-03-31 00:00",
      ["2024-03-31 00:30", "2024-03-31 01:00", "2024-03-31 01:30"],
    ],
  ] as [string, string, string[]][])("interval job across DST, %s", (_why, start, fires) => {
    const seen: (string | null)[] = [];
    let t: number | null = at(start);
    for (let i = 0; i < fires.length && t !== null; i++) {
      t = nextFire("*/30 * * * *", t, "Europe/Paris");
      seen.push(iso(t));
    }
    expect(seen).toEqual(fires.map((f) => iso(at(f))));
  });

  describe("without a time zone", () => {
    const saved = process.env.TZ;
    afterEach(() => {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    });

    it("uses UTC, not the host's zone", () => {
      process.env.TZ = "America/New_York";
      expect(iso(nextFire("0 3 * * *", at("2024-01-01 00:00")))).toBe("2024-01-01T03:00:00.000Z");
    });
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY])("rejects afterMs %s", (afterMs) => {
    expect(thrown(() => nextFire("* * * * *", afterMs)).code).toBe("INVALID_OPTION");
  });

  it("rejects invalid expressions and zones", () => {
    expect(thrown(() => nextFire("61 * * * *", 0)).code).toBe("INVALID_CRON");
    expect(thrown(() => nextFire("* * * * *", 0, "Nowhere/Special")).code).toBe("INVALID_CRON");
  });
});

describe("planFire", () => {
  const D = at("2024-01-10 00:00");
  const H = 3_600_000;
  const DAY = 24 * H;
  const M = 60_000;
  type Plan = [fire: number | null, next: number];

  // [why, expression, nextFireAtMs, nowMs, with "skip", with "catch-up-one"]
  it.each([
    ["not due yet", "0 0 * * *", D, D - 1, [null, D], [null, D]],
    ["exactly on time", "0 0 * * *", D, D, [D, D + DAY], [D, D + DAY]],
    ["10 h late", "0 0 * * *", D, D + 10 * H, [D, D + DAY], [D, D + DAY]],
    ["1 ms short of a period late", "0 0 * * *", D, D + DAY - 1, [D, D + DAY], [D, D + DAY]],
    // One period late: the old fire is missed, but the fire due exactly now is not.
    ["one period late", "0 0 * * *", D, D + DAY, [D + DAY, D + 2 * DAY], [D, D + 2 * DAY]],
    ["2.5 days down", "0 0 * * *", D, D + 2.5 * DAY, [null, D + 3 * DAY], [D, D + 3 * DAY]],
    [
      "4 min late, 5 min schedule",
      "*/5 * * * *",
      D + 5 * M,
      D + 9 * M,
      [D + 5 * M, D + 10 * M],
      [D + 5 * M, D + 10 * M],
    ],
    [
      "7 min late, 5 min schedule",
      "*/5 * * * *",
      D + 5 * M,
      D + 12 * M,
      [null, D + 15 * M],
      [D + 5 * M, D + 15 * M],
    ],
  ] as [string, string, number, number, Plan, Plan][])("%s (%s)", (_why, expr, next, now, skip, catchUp) => {
    expect(planFire(expr, next, now, "skip")).toEqual({ fireAtMs: skip[0], nextFireAtMs: skip[1] });
    expect(planFire(expr, next, now, "catch-up-one")).toEqual({
      fireAtMs: catchUp[0],
      nextFireAtMs: catchUp[1],
    });
  });

  // The period follows the zone's calendar: across spring forward the next 03:00 Paris is only 23 h later.
  // [now (UTC), policy, fire (UTC), next fire (UTC)] for a row due at 03:00 Paris on 2024-03-30.
  it.each([
    ["2024-03-31 00:59:59.999", "skip", "2024-03-30 02:00", "2024-03-31 01:00"],
    ["2024-03-31 01:30", "skip", null, "2024-04-01 01:00"],
    ["2024-03-31 01:30", "catch-up-one", "2024-03-30 02:00", "2024-04-01 01:00"],
  ] as [string, MissedFirePolicy, string | null, string][])(
    "0 3 * * * Europe/Paris across DST, now %s, %s",
    (now, policy, fire, next) => {
      const plan = planFire("0 3 * * *", at("2024-03-30 02:00"), at(now), policy, "Europe/Paris");
      expect({ fire: iso(plan.fireAtMs), next: iso(plan.nextFireAtMs) }).toEqual({
        fire: fire === null ? null : iso(at(fire)),
        next: iso(at(next)),
      });
    },
  );

  it("advances strictly past now, so the row is not due again", () => {
    for (const policy of ["skip", "catch-up-one"] as const) {
      const plan = planFire("*/5 * * * *", D, D + 10 * M, policy);
      expect(plan.nextFireAtMs).toBeGreaterThan(D + 10 * M);
    }
  });

  it("rejects an unknown policy and invalid expressions", () => {
    expect(thrown(() => planFire("0 0 * * *", D, D, "all" as MissedFirePolicy)).code).toBe("INVALID_OPTION");
    expect(thrown(() => planFire("0 0 * *", D, D, "skip")).code).toBe("INVALID_CRON");
    expect(thrown(() => planFire("0 0 * * *", D, D, "skip", "Mars/Olympus")).code).toBe("INVALID_CRON");
  });
});

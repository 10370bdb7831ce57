import { describe, expect, it } from "vitest";
import {
  byDueTime,
  nextInput,
  parkTimeoutMs,
  timerOf,
  type InboxEvent,
  type MachineTimer,
} from "../../../src/logic/machine-timers.js";

const t = (id: string, dueAt: number): MachineTimer => ({ id, event: { type: id }, dueAt });
const ev = (seq: number, sentAt: number): InboxEvent => ({ seq, sentAt });

describe("machine timers", () => {
  it.each([
    ["due delay ms after scheduling", 2000, 1000, 3000],
    ["a zero delay is due at once", 0, 500, 500],
    ["a negative delay is due at once", -5, 500, 500],
    ["a NaN delay is due at once", Number.NaN, 500, 500],
  ])("timerOf: %s", (_label, delay, at, dueAt) => {
    expect(timerOf({ id: "a", event: { type: "a" }, delay }, at)).toEqual({
      id: "a",
      event: { type: "a" },
      dueAt,
    });
  });

  it("byDueTime orders by due time, keeps ties in order, leaves its input alone", () => {
    const list = [t("c", 30), t("a", 10), t("b", 10)];
    expect(byDueTime(list).map((x) => x.id)).toEqual(["a", "b", "c"]);
    expect(list.map((x) => x.id)).toEqual(["c", "a", "b"]);
  });

  it.each<[string, MachineTimer[], InboxEvent[], number, string | null]>([
    ["nothing at all", [], [], 100, null],
    ["a timer not due yet, no event", [t("a", 200)], [], 100, null],
    ["a due timer", [t("a", 100)], [], 100, "timer:a"],
    ["the earliest of two due timers", [t("b", 90), t("a", 50)], [], 100, "timer:a"],
    ["an event when no timer is due", [t("a", 200)], [ev(1, 10)], 100, "event:1"],
    ["an event sent before the due timer", [t("a", 60)], [ev(1, 50)], 100, "event:1"],
    ["a timer due before the event was sent", [t("a", 40)], [ev(1, 50)], 100, "timer:a"],
    ["a timer due when the event was sent goes first", [t("a", 50)], [ev(1, 50)], 100, "timer:a"],
    ["the oldest event, by sequence", [], [ev(3, 10), ev(4, 5)], 100, "event:3"],
  ])("nextInput: %s", (_label, timers, events, now, expected) => {
    const next = nextInput(timers, events, now);
    const got =
      next === null ? null : next.kind === "timer" ? `timer:${next.timer.id}` : `event:${next.event.seq}`;
    expect(got).toBe(expected);
  });

  it.each<[string, MachineTimer[], number, number | null]>([
    ["no timers: waits for events only", [], 0, null],
    ["until the earliest timer", [t("a", 5000), t("b", 2000)], 1000, 1000],
    ["a timer already due: 1 ms", [t("a", 500)], 1000, 1],
    ["rounds a fraction up", [t("a", 1000.4)], 0, 1001],
  ])("parkTimeoutMs: %s", (_label, timers, now, expected) => {
    expect(parkTimeoutMs(timers, now)).toBe(expected);
  });
});

import { describe, expect, it } from "vitest";
import * as logic from "../../../src/logic/index.js";

describe("src/logic/index.ts", () => {
  it.each([
    ["resolveRetryPolicy", "function"],
    ["backoffDelayMs", "function"],
    ["applyJitter", "function"],
    ["retryDelayMs", "function"],
    ["defaultRetryPolicy", "object"],
    ["ageBoost", "function"],
    ["effectivePriority", "function"],
    ["compareClaimOrder", "function"],
    ["defaultBoostIntervalMs", "number"],
    ["defaultPollingConfig", "object"],
    ["resolvePollingConfig", "function"],
    ["initialPollingState", "function"],
    ["afterPoll", "function"],
    ["afterWakeup", "function"],
    ["idleFor", "function"],
    ["defaultWatchdogConfig", "object"],
    ["defaultTimeoutMs", "number"],
    ["resolveWatchdogConfig", "function"],
    ["watchdogSchedule", "function"],
    ["nextStep", "function"],
    ["dueSteps", "function"],
    ["defaultBreakerConfig", "object"],
    ["resolveBreakerConfig", "function"],
    ["initialBreaker", "function"],
    ["breakerAllow", "function"],
    ["breakerRecord", "function"],
    ["validateCron", "function"],
    ["nextFire", "function"],
    ["planFire", "function"],
  ])("re-exports %s (%s)", (name, type) => {
    expect(typeof (logic as Record<string, unknown>)[name]).toBe(type);
  });
});

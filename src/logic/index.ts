/**
 * The pure decisions of the runtime, in one place: each takes the time as an argument and does no I/O, so
 * actors only connect them to timers and SQL. Re-exported here so callers import from `src/logic/index.js`.
 */

export * from "./age-boost.js";
export * from "./backoff.js";
export * from "./breaker.js";
export * from "./cron.js";
export * from "./polling-strategy.js";
export * from "./watchdog-schedule.js";

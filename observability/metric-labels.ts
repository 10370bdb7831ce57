/**
 * The fixed label values of pawl's metrics, shared by the metric definitions, the event listeners, the
 * documentation and the tests that check the dashboard and the alert rules against them.
 */

/**
 * The values of the `outcome` label of `pawl_job_outcomes_total`. Exactly one per finished attempt:
 * `dead` counts every move to the dead letter queue (a last attempt that timed out included),
 * `timed_out` an attempt that timed out and will be retried, `retried` any other failure that will be,
 * `waiting` an attempt that parked its job until a signal (`ctx.waitForSignal()`).
 */
export const jobOutcomes = [
  "succeeded",
  "retried",
  "timed_out",
  "dead",
  "snoozed",
  "canceled",
  "rescheduled_breaker",
  "rescheduled_permit",
  "rescheduled_rate_limit",
  "rescheduled_shutdown",
  "waiting",
  "lost",
] as const;

/** One value of {@link jobOutcomes}. */
export type JobOutcome = (typeof jobOutcomes)[number];

/** The polling modes (values of the `mode` label of `pawl_polling_mode`). */
export const pollingModes = ["burst", "normal", "deep-idle"] as const;

/** The breaker states (values of the `state` label of `pawl_breaker_state`), lower-cased. */
export const breakerStates = ["closed", "open", "half_open"] as const;

/** The statuses `pawl_queue_depth` reports (PENDING and RUNNING rows, and DEAD ones: the DLQ). */
export const queueStatuses = ["pending", "running", "dead"] as const;

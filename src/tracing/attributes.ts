/**
 * The span attributes pawl sets (docs/tracing.md#attributes): OpenTelemetry's messaging semantic
 * conventions where they name the thing (a job is a message, its queue the destination), `pawl.*` for the
 * rest.
 */
/** `messaging.system`: always "pawl". */
export const MESSAGING_SYSTEM = "messaging.system";
/** `messaging.operation.type`: "send" (enqueue) or "process" (an attempt). */
export const MESSAGING_OPERATION_TYPE = "messaging.operation.type";
/** `messaging.operation.name`: the same words as the type. */
export const MESSAGING_OPERATION_NAME = "messaging.operation.name";
/** `messaging.destination.name`: the job's queue. */
export const MESSAGING_DESTINATION_NAME = "messaging.destination.name";
/** `messaging.message.id`: the job id. */
export const MESSAGING_MESSAGE_ID = "messaging.message.id";
/** `messaging.client.id`: the node id of the node running an attempt. */
export const MESSAGING_CLIENT_ID = "messaging.client.id";
/** `messaging.batch.message_count`: jobs in one enqueueMany. */
export const MESSAGING_BATCH_MESSAGE_COUNT = "messaging.batch.message_count";
/** `pawl.job.type`. */
export const JOB_TYPE = "pawl.job.type";
/** `pawl.job.priority`: the raw priority. */
export const JOB_PRIORITY = "pawl.job.priority";
/** `pawl.job.attempt`: this attempt's number, from 1. */
export const JOB_ATTEMPT = "pawl.job.attempt";
/** `pawl.job.outcome`: what the attempt decided (succeeded, retried, dead, snoozed, ...). */
export const JOB_OUTCOME = "pawl.job.outcome";
/** `pawl.job.timed_out`: the attempt reached its timeout. */
export const JOB_TIMED_OUT = "pawl.job.timed_out";
/** `pawl.job.inserted`: false when enqueue returned a live job with the same unique key. */
export const JOB_INSERTED = "pawl.job.inserted";
/** `pawl.job.delay_ms`: a snooze's or reschedule's delay. */
export const JOB_DELAY_MS = "pawl.job.delay_ms";
/** `pawl.recurring.name`: the schedule whose fire enqueued the job. */
export const RECURRING_NAME = "pawl.recurring.name";
/** `pawl.flow.id`: the flow (chain, batch, workflow) a job belongs to. */
export const FLOW_ID = "pawl.flow.id";

/**
 * The public API of composition: chains, batches, workflows, signals, pause/resume and per-queue
 * concurrency (docs/composition.md). The methods live on PawlClient (`pawl.chain`, `pawl.signal`, ...);
 * this module exports their types and errors.
 */
export { WaitForSignal, JobStateError, JobNotWaitingError, FlowNotFoundError } from "./errors.js";
export type {
  BatchInput,
  ChainStep,
  CompletionJob,
  CompletionPayload,
  FlowCompletion,
  FlowJobOptions,
  FlowOptions,
  WorkflowInput,
  WorkflowJob,
} from "./flow-input.js";
export type { Flow, FlowDetail, FlowHandle } from "./flows.js";
export type { FlowContext, SignalDelivery, WaitForSignalOptions } from "./job-composition.js";
export type { SignalResult } from "./signals.js";
export type { Pause, PauseResult } from "./pause.js";
export type { FlowFailurePolicy, FlowKind, FlowListFilter } from "../store/composition/flow-sql.js";
export type { PauseKind } from "../store/composition/pause-sql.js";
// Durable handlers (docs/durable.md).
export {
  ChildJobFailedError,
  ChildWaitTimeoutError,
  DurableStepError,
  DurableWait,
} from "./durable/durable-errors.js";
export type { ChildOutcome, DurableStepErrorCode } from "./durable/durable-errors.js";
export type { DurableWaitOptions, SpawnedJob, StepContext } from "./durable/durable-run.js";
export type { SpawnOptions } from "./durable/durable-services.js";
export type { SignalOptions } from "./signals.js";

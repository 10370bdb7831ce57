/**
 * The command table. main.ts looks commands up here by their words, so a new command (`pawl inspect`,
 * `pawl chains`, ...) is one file in this folder and one entry below; help lists them in this order.
 */
import type { Command } from "../command.js";
import { dlqListCommand, dlqPurgeCommand, dlqRetryCommand } from "./dlq.js";
import { enqueueCommand } from "./enqueue.js";
import { explainCommand } from "./explain.js";
import { inspectCommand } from "./inspect.js";
import { keysCommand } from "./keys.js";
import { doctorCommand } from "./doctor.js";
import { cancelCommand, jobCommand, jobsCommand } from "./jobs.js";
import { migrateCommand } from "./migrate.js";
import { grantsCommand } from "./grants.js";
import { nodesCommand } from "./nodes.js";
import { schedulesCommand } from "./schedules.js";
import { statsCommand } from "./stats.js";
import {
  flowCommand,
  flowsCommand,
  pausedCommand,
  pauseCommandEntry,
  resumeCommandEntry,
  signalCommand,
} from "./flows.js";

/** Every command, in the order help lists them. */
export const commands: readonly Command[] = [
  migrateCommand,
  grantsCommand,
  enqueueCommand,
  jobsCommand,
  jobCommand,
  explainCommand,
  cancelCommand,
  dlqListCommand,
  dlqRetryCommand,
  dlqPurgeCommand,
  inspectCommand,
  flowsCommand,
  flowCommand,
  signalCommand,
  pauseCommandEntry,
  resumeCommandEntry,
  pausedCommand,
  nodesCommand,
  statsCommand,
  keysCommand,
  doctorCommand,
  schedulesCommand,
];

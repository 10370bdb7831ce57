/**
 * The waiting part of a node's shutdown, once it drains (no more claims, buffered jobs handed back):
 * running attempts get their grace and are then aborted, a claim in flight is waited for (its rows are
 * handed back as it lands), and the outcome writer is drained. Every wait is bounded, so an unreachable
 * database cannot hold shutdown forever: unwritten rows stay RUNNING under this node id, and orphan
 * recovery (or this node's next startup) takes them back.
 */
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { OutcomeWriter } from "./outcome-writer.js";
import type { SlotPool } from "./claim/slot-pool.js";

/** How long shutdown waits for a claim in flight, and for unwritten outcomes once the jobs are done. */
export const outcomeDrainLimitMs = 10_000;

/** What the drain waits on. */
export interface NodeDrainDeps {
  clock: Clock;
  logger: Logger;
  slots: SlotPool;
  writer: OutcomeWriter;
  /** Sends ABORT to every attempt not settled yet; returns how many. */
  abortRunning: () => number;
  /** Settles when every claim in flight now has been handled; null when none is. */
  claimInFlight: () => Promise<void> | null;
}

/** Waits out the drain; resolves with the number of attempts aborted after `graceMs`. */
export async function drainNode(d: NodeDrainDeps, graceMs: number): Promise<number> {
  let aborted = 0;
  if (d.slots.busy > 0) {
    const idle = d.slots.whenIdle();
    let timer: unknown = null;
    const graceOver = new Promise<void>((resolve) => {
      timer = d.clock.setTimeout(() => resolve(), graceMs);
    });
    await Promise.race([idle, graceOver]);
    d.clock.clearTimeout(timer);
    aborted = d.abortRunning();
  }
  // Claims still in flight commit rows under this node: wait for them, so they are handed back through
  // the writer below (and the pool is not closed under it).
  const claim = d.claimInFlight();
  if (claim) await Promise.race([claim, waitMs(d.clock, outcomeDrainLimitMs)]);
  const drained = await Promise.race([
    d.writer.drain().then(() => true),
    waitMs(d.clock, outcomeDrainLimitMs).then(() => false),
  ]);
  if (!drained) {
    d.logger.warn("stopped with job outcomes not written; orphan recovery will reclaim them", {
      pending: d.writer.pending,
    });
  }
  return aborted;
}

function waitMs(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(() => resolve(), ms));
}

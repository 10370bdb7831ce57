/**
 * How often `pawl.waitFor` reads the store when no completion notice arrives. The notice (a `finished`
 * hint through the coordinator) is only a shortcut; the poll is what makes waiting correct without one.
 *
 * - Without a connected coordinator the poll is the only way to learn of an outcome: it starts fast
 *   (`minMs`) and backs off by `factor` per read that resolved nobody, up to `maxMs`.
 * - With one connected, notices do the work and the poll is a safety net for a notice that was lost
 *   (NOTIFY is not durable; a job ended by a path that sends none): it starts at `connectedMinMs`.
 *
 * The schedule restarts from its first step when a new waiter arrives or a read resolved someone. Every
 * read is one statement for every waiter, so the cost is per tick, not per waiter.
 */

/** The poll schedule's bounds. */
export interface WaitPollConfig {
  /** First delay without a coordinator (ms). */
  minMs: number;
  /** Largest delay without a coordinator (ms). */
  maxMs: number;
  /** First delay while a coordinator is connected (ms). */
  connectedMinMs: number;
  /** Largest delay while a coordinator is connected (ms). */
  connectedMaxMs: number;
  /** Growth per idle read (>= 1). */
  factor: number;
}

/** The defaults: 100 ms doubling to 2 s without a coordinator; 5 s doubling to 30 s with one. */
export const defaultWaitPollConfig: WaitPollConfig = {
  minMs: 100,
  maxMs: 2_000,
  connectedMinMs: 5_000,
  connectedMaxMs: 30_000,
  factor: 2,
};

/**
 * The delay before the next poll, after `idleReads` reads in a row that resolved no waiter.
 *
 * @example
 * ```ts
 * waitPollDelayMs(0, false); // 100
 * waitPollDelayMs(3, false); // 800
 * waitPollDelayMs(10, false); // 2000
 * waitPollDelayMs(0, true); // 5000
 * ```
 */
export function waitPollDelayMs(
  idleReads: number,
  connected: boolean,
  config: WaitPollConfig = defaultWaitPollConfig,
): number {
  const min = connected ? config.connectedMinMs : config.minMs;
  const max = connected ? config.connectedMaxMs : config.maxMs;
  const steps = Math.max(0, Math.min(idleReads, 64));
  return Math.min(max, min * Math.pow(Math.max(1, config.factor), steps));
}

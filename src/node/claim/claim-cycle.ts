/**
 * The poller's `claim` effect and what follows it: every lane with room claims (lane-claim.ts), the jobs
 * go into their lanes (or straight back when the node drains meanwhile), the strategy hears the sample,
 * and the poller gets `CLAIMED` with the next delay, or `CLAIM_FAILED` to back off. The poller may start a
 * second cycle while one is out (claim ahead, docs/machines/poller.md): each reserves what it asks of the
 * lanes until its rows land, and each reports on its own. stop() waits for every cycle in flight
 * ({@link ClaimCycle.inFlight}).
 */
import type { AnyActorRef } from "xstate";
import type { Clock } from "../../core/clock.js";
import { toError, type PawlEventEmitter } from "../../core/events.js";
import type { Logger } from "../../core/logger.js";
import type { PollingStrategyContext } from "../../machines/polling-strategy-actor.js";
import { sortClaimOrder, type ClaimedJob } from "../../store/claim/claim-jobs.js";
import type { DueNotes } from "./due-notes.js";
import { jobInfo } from "../attempt/job-run.js";
import { claimLanes, reserveLanes, type LaneBatch } from "./lane-claim.js";
import type { NodeLanes } from "./lanes.js";

/** The largest batch one claim takes (bigger batches hold row locks longer for little gain). */
const maxClaimBatch = 500;

/** What a claim cycle needs from the node. */
export interface ClaimCycleDeps {
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  /** The job types this node runs. */
  types: ReadonlyMap<string, unknown>;
  lanes: NodeLanes;
  dues: DueNotes;
  /** The strategy's delay before it has reported one. */
  minDelayMs: number;
  /** Busy slots over all slots, for the strategy. */
  utilization: () => number;
  actor: (systemId: string) => AnyActorRef | undefined;
  /** Whether the node drains (its machine's state). */
  draining: () => boolean;
  /** Claimed jobs that will not run here go back to PENDING. */
  handBack: (jobs: readonly ClaimedJob[]) => void;
  /** Starts buffered jobs in free slots (the runtime's dispatch). */
  pump: () => void;
}

/** Runs the node's claims. */
export class ClaimCycle {
  /** Claims whose results are not handled yet (at most two: the poller caps them). */
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly d: ClaimCycleDeps) {}

  /** Settles once every claim in flight now has been handled; null when none is. */
  inFlight(): Promise<void> | null {
    return this.pending.size === 0 ? null : Promise.all(this.pending).then(() => {});
  }

  /** Every lane with room claims up to its room (at most 500), and the poller hears back. */
  claim(): void {
    const { d } = this;
    const types = [...d.types.keys()];
    const started = d.clock.now();
    const lanes = d.draining() || types.length === 0 ? [] : d.lanes.withRoom();
    if (lanes.length === 0) {
      this.after([], 0, started);
      return;
    }
    // This poll looks at the levels whose known due times have come (claimers that seek look there).
    const due = d.dues.take(started);
    const reservation = reserveLanes(lanes, maxClaimBatch);
    // Jobs of a statement that answered while another of the poll is still out (the keyed and unkeyed
    // claims run at once): buffered and started now, and counted with the poll's when it ends.
    const early: LaneBatch[] = [];
    const settled = claimLanes(reservation, {
      types,
      dueLevels: due.levels,
      onError: (lane, error) =>
        d.events.emit("error", { where: `claim (queue ${lane.queue})`, error: toError(error) }),
      early: (lane, jobs) => {
        const batch = { lane, jobs: [...jobs] };
        early.push(batch);
        this.buffer([batch]);
        d.pump();
      },
    }).then(
      (c) => {
        // In the same step as the rows enter the lanes, so the room never counts them twice or not at all.
        reservation.release();
        this.after(c.batches, c.limit, started, early);
      },
      (error: unknown) => {
        reservation.release();
        // Jobs an earlier statement of this poll handed over are running: their claim is reported even
        // though the poll failed (metrics, and whoever tells a job's first claim from its second).
        this.reportClaim(
          early.flatMap((b) => b.jobs),
          reservation.limit,
          started,
        );
        // The rows did not move: their due times still stand for the poll after the backoff.
        d.dues.putBack(due.taken);
        d.logger.warn("claim failed; the poller backs off", { error: String(error) });
        d.events.emit("error", { where: "claim", error: toError(error) });
        d.actor("poller")?.send({ type: "CLAIM_FAILED", error, at: d.clock.now() });
      },
    );
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
  }

  /**
   * Puts claimed jobs into their lanes; returns them in claim order, or none when the node drains (they
   * were claimed while shutdown began: handed straight back, attempt not counted).
   */
  private buffer(batches: readonly LaneBatch[]): ClaimedJob[] {
    const jobs = batches.length === 1 ? (batches[0] as LaneBatch).jobs : claimOrder(batches);
    if (this.d.draining()) {
      this.d.handBack(jobs);
      return [];
    }
    const now = this.d.clock.now();
    for (const { lane, jobs: claimed } of batches) {
      for (const job of claimed) lane.buffer.push({ job, claimedAt: now, lane });
    }
    return jobs;
  }

  /** The `claim` event of a poll's jobs (none: no event). */
  private reportClaim(jobs: readonly ClaimedJob[], limit: number, started: number): void {
    const { clock, events } = this.d;
    if (jobs.length === 0 || !events.has("claim")) return;
    events.emit("claim", {
      jobs: jobs.map(jobInfo),
      limit,
      durationMs: clock.now() - started,
      boosts: jobs.filter((j) => j.boost > 0).map((j) => j.boost),
    });
  }

  private after(
    batches: readonly LaneBatch[],
    limit: number,
    started: number,
    early: readonly LaneBatch[] = [],
  ): void {
    const { clock, events } = this.d;
    const now = clock.now();
    const late = this.buffer(batches);
    const jobs = early.length === 0 ? late : [...early.flatMap((b) => b.jobs), ...late];
    this.reportClaim(jobs, limit, started);
    const strategy = this.d.actor("strategy");
    strategy?.send({
      type: "POLLED",
      sample: { at: now, claimed: jobs.length, limit },
      utilization: this.d.utilization(),
    });
    const s = strategy?.getSnapshot().context as PollingStrategyContext | undefined;
    const delayMs = s?.delayMs ?? this.d.minDelayMs;
    events.emit("poll", {
      mode: s?.mode ?? "normal",
      delayMs,
      claimed: jobs.length,
      limit,
      durationMs: now - started,
    });
    this.d.actor("poller")?.send({
      type: "CLAIMED",
      claimed: jobs.length,
      limit,
      delayMs,
      mode: s?.mode ?? "normal",
      at: now,
      dueAt: this.d.dues.next(),
      heldBack: batches.some((b) => b.lane.claimer.heldBack?.() === true),
    });
  }
}

/** The jobs of several lanes' claims, in claim order (for the `claim` event). */
function claimOrder(batches: readonly LaneBatch[]): ClaimedJob[] {
  return sortClaimOrder(batches.flatMap((b) => b.jobs));
}

/**
 * The node's side of its circuit breakers: spawns a service's breaker actor on first use (after the current step), decides
 * admission on the actor's snapshot with the pure `breakerAllow`, and tells the actor what happened
 * (ADMIT a trial, RESULT, RELEASE). Every message goes after the current actor step (`sendLater`), and
 * carries a delta the breaker applies to its own current snapshot, so no decision can overwrite a result.
 */
import type { AnyActorRef } from "xstate";
import type { Clock } from "../core/clock.js";
import {
  breakerAllow,
  initialBreaker,
  type BreakerConfig,
  type BreakerDecision,
  type BreakerSnapshot,
} from "../logic/breaker.js";
import type { BreakerInput } from "../machines/breaker-machine.js";
import type { JobRun } from "./attempt/job-run.js";

/** What the gate needs from the node. */
export interface BreakerGateDeps {
  actor(systemId: string): AnyActorRef | undefined;
  /** Spawns a service's breaker after the current step (the node ignores a second request). */
  spawnLater(input: BreakerInput): void;
  sendLater(systemId: string, event: { type: string } & Record<string, unknown>): void;
  configFor(service: string): BreakerConfig;
  clock: Clock;
}

/** Admission and reporting for the breakers of one node. */
export class BreakerGate {
  constructor(private readonly d: BreakerGateDeps) {}

  /**
   * Decides whether the job's breaker lets it run now and keeps the decision on the attempt
   * (`run.breaker`; null for a type without a service). Spawns the service's breaker on first use; changes
   * nothing in the breaker itself: {@link admit} records.
   */
  decide(run: JobRun): void {
    const service = run.type.service;
    run.breaker = service ? this.decideFor(service) : null;
  }

  /** Records the admission {@link decide} kept: a HALF_OPEN trial is reported to the breaker as ADMIT. */
  admit(run: JobRun): void {
    const service = run.type.service;
    if (service && run.breaker?.allowed && run.breaker.trial)
      this.d.sendLater(`breaker-${service}`, { type: "ADMIT", trial: true });
  }

  /** Reports the outcome of a call the breaker admitted. */
  result(run: JobRun, ok: boolean): void {
    if (!run.type.service || !run.breaker?.allowed) return;
    this.d.sendLater(`breaker-${run.type.service}`, { type: "RESULT", ok, trial: run.breaker.trial });
  }

  /** Frees a trial whose call ended without a verdict (snooze, cancel, permit denied, shutdown). */
  release(run: JobRun): void {
    if (!run.type.service || !run.breaker?.allowed || !run.breaker.trial) return;
    this.d.sendLater(`breaker-${run.type.service}`, { type: "RELEASE", trial: true });
  }

  private decideFor(service: string): BreakerDecision {
    const ref = this.d.actor(`breaker-${service}`);
    if (!ref) {
      // First use of the service: its breaker is spawned after this step (spawning from inside a job
      // task's action would run the node's step nested in it), and a fresh breaker is CLOSED, so the
      // decision is taken on the initial snapshot. Every later message to the breaker goes after the
      // spawn (microtasks keep their order).
      this.d.spawnLater({ service, config: this.d.configFor(service), now: () => this.d.clock.now() });
      return breakerAllow(initialBreaker(), this.d.clock.now(), this.d.configFor(service));
    }
    const snapshot = ref.getSnapshot() as { context: { breaker: BreakerSnapshot } };
    return breakerAllow(snapshot.context.breaker, this.d.clock.now(), this.d.configFor(service));
  }
}

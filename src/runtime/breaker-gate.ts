/**
 * The node's side of its circuit breakers: spawns a service's breaker actor on first use, decides
 * admission on the actor's snapshot with the pure `breakerAllow`, and tells the actor what happened
 * (ADMIT a trial, RESULT, RELEASE). Every message goes after the current actor step (`sendLater`), and
 * carries a delta the breaker applies to its own current snapshot, so no decision can overwrite a result.
 */
import type { AnyActorRef } from "xstate";
import type { Clock } from "../clock.js";
import {
  breakerAllow,
  type BreakerConfig,
  type BreakerDecision,
  type BreakerSnapshot,
} from "../logic/breaker.js";
import type { BreakerInput } from "../machines/breaker-machine.js";
import type { JobRun } from "./job-run.js";

/** What the gate needs from the node. */
export interface BreakerGateDeps {
  actor(systemId: string): AnyActorRef | undefined;
  spawn(input: BreakerInput): void;
  sendLater(systemId: string, event: { type: string } & Record<string, unknown>): void;
  configFor(service: string): BreakerConfig;
  clock: Clock;
}

/** Admission and reporting for the breakers of one node. */
export class BreakerGate {
  constructor(private readonly d: BreakerGateDeps) {}

  /** Whether the job's breaker refuses it now (no change to the breaker: {@link admit} records). */
  refuses(run: JobRun): boolean {
    const service = run.type.service;
    if (!service) return false;
    run.breaker = this.decide(service);
    return !run.breaker.allowed;
  }

  /** Records the job's admission: a HALF_OPEN trial is reported to the breaker as ADMIT. */
  admit(run: JobRun): void {
    const service = run.type.service;
    if (!service) return;
    run.breaker = this.decide(service);
    if (run.breaker.allowed && run.breaker.trial)
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

  private decide(service: string): BreakerDecision {
    const snapshot = this.actorFor(service).getSnapshot() as { context: { breaker: BreakerSnapshot } };
    return breakerAllow(snapshot.context.breaker, this.d.clock.now(), this.d.configFor(service));
  }

  private actorFor(service: string): AnyActorRef {
    const id = `breaker-${service}`;
    let ref = this.d.actor(id);
    if (!ref) {
      this.d.spawn({ service, config: this.d.configFor(service), now: () => this.d.clock.now() });
      ref = this.d.actor(id) as AnyActorRef;
    }
    return ref;
  }
}

/**
 * The durable machines' way into a node's inspection. A machine run (machine-runner.ts) creates its actor
 * on its own, outside the node's actor system, so the node's `system.inspect` never sees it. Each run
 * passes {@link MachineInspection.observe} as its actor's `inspect` option (the one path its inspection
 * events take) and is listed here while it runs. The inspection feed of `pawl/observability` listens here
 * beside the node's own system, so the inspector's SSE stream and the Stately bridge show a live machine's
 * events and snapshots; the bridge announces the live ones when it connects and reads the parked ones'
 * definitions through {@link MachineInspection.configOf}.
 *
 * A node nobody watches pays one function call per inspection event of a machine, returning at once.
 */
import type { AnyActorRef, InspectionEvent } from "xstate";

/** The id a durable machine has in the inspection views, live or parked: `machine-<job id>`. */
export function machineActorId(jobId: string): string {
  return `machine-${jobId}`;
}

/** A listener of the machines' inspection events; called inside the machines' transitions. */
export type MachineInspectionListener = (event: InspectionEvent) => void;

/** The machine definition's config (what Stately draws) of a job type at a version, if registered. */
export type MachineConfigOf = (type: string, version: string | null) => unknown;

/** The running machines of one node and their inspection events. */
export class MachineInspection {
  private readonly listeners = new Set<MachineInspectionListener>();
  private readonly actors = new Set<AnyActorRef>();

  constructor(private readonly config: MachineConfigOf = () => undefined) {}

  /** The `inspect` observer of every machine actor this node creates. Never throws into the machine. */
  readonly observe = (event: InspectionEvent): void => {
    if (this.listeners.size === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // Runs inside the machine's transition: a listener's failure must not reach it.
      }
    }
  };

  /** Adds a listener; returns its removal (the same shape as xstate's `system.inspect`). */
  inspect(listener: MachineInspectionListener): { unsubscribe(): void } {
    this.listeners.add(listener);
    return { unsubscribe: () => void this.listeners.delete(listener) };
  }

  /** A machine actor starts running on this node. */
  started(actor: AnyActorRef): void {
    this.actors.add(actor);
  }

  /** A machine actor stopped (its run parked, ended or failed). */
  stopped(actor: AnyActorRef): void {
    this.actors.delete(actor);
  }

  /** The machine actors running on this node now. */
  live(): AnyActorRef[] {
    return [...this.actors];
  }

  /** The config of the machine a job of `type` on `version` would run on here, or undefined. */
  configOf(type: string, version: string | null): unknown {
    return this.config(type, version);
  }
}

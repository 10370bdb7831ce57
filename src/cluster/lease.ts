/**
 * Leases for the cluster's singleton work, on scheduler_lock. A node takes a named lease for a TTL (by
 * the database's clock), does its work while the lease is valid by its own conservative local deadline,
 * and gives it back; a crashed holder's lease expires on its own. One manager per node also refuses a
 * second local holder of the same name, so two passes of a service in one process never overlap either.
 *
 * Leases make maintenance cheap (one node works, the others skip); the maintenance statements are
 * themselves safe to run twice, so an overlap after a lost lease costs time, never correctness.
 */
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { ClusterStore } from "../store/job-store.js";
import type { LockGrant, LockRow } from "../store/cluster/lock-sql.js";
import { leaseDeadline } from "../logic/cluster-logic.js";

/** The lease names pawl's services use. */
export const leaseNames = {
  orphanSweep: "pawl:orphan-sweep",
  /**
   * Startup cleanups (one node id's rows of a previous run): one at a time, so the nodes of a rolling
   * restart do not scan the live table together. Not the sweep's lease: sweeps rest that one after each
   * pass, which would hold a starting node back for up to half a sweep interval each time it tried.
   */
  startupCleanup: "pawl:startup-cleanup",
  prune: "pawl:prune",
  /** Making and dropping the time partitions of SUCCEEDED history (src/cluster/history-partitioner.ts). */
  history: "pawl:history",
  recurring: "pawl:recurring",
} as const;

/** What a {@link LeaseManager} works with. */
export interface LeaseManagerDeps {
  store: ClusterStore;
  /** The owner written into scheduler_lock: this node's id. */
  owner: string;
  ttlMs: number;
  clock: Clock;
  events: PawlEventEmitter;
}

/** A held lease. */
export class Lease {
  private lost = false;
  private released = false;

  constructor(
    private readonly manager: LeaseManager,
    /** The lease's name. */
    readonly name: string,
    /** The grant as the database recorded it. */
    public grant: LockGrant,
    /** The local time by which the holder must stop (see {@link leaseDeadline}). */
    public deadline: number,
  ) {}

  /** Whether the holder may still act: not released, not lost, and before the local deadline. */
  valid(): boolean {
    return !this.lost && !this.released && this.manager.clock.now() < this.deadline;
  }

  /** Extends the lease by the TTL; false (and the lease is lost) when it had expired or was taken. */
  async renew(now: Date | null = null): Promise<boolean> {
    if (this.lost || this.released) return false;
    const sent = this.manager.clock.now();
    const grant = await this.manager.store.renewLock(this.name, this.manager.owner, this.manager.ttlMs, now);
    if (!grant) {
      this.markLost("renewal refused");
      return false;
    }
    this.grant = grant;
    this.deadline = leaseDeadline(sent, this.manager.ttlMs);
    return true;
  }

  /**
   * Gives the lease back. With `restMs`, no node (this one too) may take it before `restMs` from now.
   * Idempotent; a failure only leaves it to expire.
   */
  async release(restMs = 0, now: Date | null = null): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.manager.forget(this.name);
    if (this.lost) return;
    await this.manager.store.releaseLock(this.name, this.manager.owner, restMs, now).catch(() => false);
  }

  /** @internal */
  markLost(reason: string): void {
    if (this.lost) return;
    this.lost = true;
    this.manager.events.emit("cluster:lease-lost", { name: this.name, nodeId: this.manager.owner, reason });
  }
}

/** Acquires and tracks this node's leases. */
export class LeaseManager {
  private readonly local = new Set<string>();

  constructor(private readonly deps: LeaseManagerDeps) {}

  /** @internal */
  get store(): ClusterStore {
    return this.deps.store;
  }
  /** This node's id, the owner of its leases. */
  get owner(): string {
    return this.deps.owner;
  }
  /** The lease TTL (ms). */
  get ttlMs(): number {
    return this.deps.ttlMs;
  }
  /** @internal */
  get clock(): Clock {
    return this.deps.clock;
  }
  /** @internal */
  get events(): PawlEventEmitter {
    return this.deps.events;
  }

  /**
   * Takes `name` if no other node holds it (and no other pass of this process does). Returns the lease,
   * or null when it is held elsewhere. `now` overrides the database's time (tests).
   */
  async acquire(name: string, now: Date | null = null): Promise<Lease | null> {
    if (this.local.has(name)) return null;
    this.local.add(name);
    try {
      const sent = this.deps.clock.now();
      const grant = await this.deps.store.acquireLock(name, this.deps.owner, this.deps.ttlMs, now);
      if (!grant) {
        this.local.delete(name);
        return null;
      }
      this.deps.events.emit("cluster:lease-acquired", {
        name,
        nodeId: this.deps.owner,
        expiresAt: grant.expiresAt,
      });
      return new Lease(this, name, grant, leaseDeadline(sent, this.deps.ttlMs));
    } catch (error) {
      this.local.delete(name);
      throw error;
    }
  }

  /**
   * Runs `fn` under the lease `name` and releases it afterwards (resting it `restMs`, see
   * {@link Lease.release}). Resolves `{ acquired: false }` without running `fn` when another node holds it.
   *
   * @example
   * ```ts
   * const r = await leases.withLease("pawl:prune", async (lease) => { while (lease.valid()) ... });
   * ```
   */
  async withLease<R>(
    name: string,
    fn: (lease: Lease) => Promise<R>,
    now: Date | null = null,
    restMs = 0,
  ): Promise<{ acquired: true; value: R } | { acquired: false }> {
    const lease = await this.acquire(name, now);
    if (!lease) return { acquired: false };
    try {
      return { acquired: true, value: await fn(lease) };
    } finally {
      await lease.release(restMs, now);
    }
  }

  /** Every lease row in the schema. */
  list(now: Date | null = null): Promise<LockRow[]> {
    return this.deps.store.listLocks(now);
  }

  /** @internal */
  forget(name: string): void {
    this.local.delete(name);
  }
}

/**
 * One process per node id. At start() the guard takes the node id's session lock (db/session-lock.ts)
 * and judges the row the id already has ({@link previousRunVerdict}): a previous run that crashed is
 * taken over (at once when its lock is free, else once its heartbeat is stale), a live one refuses the
 * start with {@link NodeIdInUseError}. While the node runs, the guard keeps the lock (retaken after its
 * connection was lost, before each heartbeat) and publishes whether it holds it (`node_info.idLock`), so
 * the next start knows whether a free lock means anything.
 */
import { NodeIdInUseError } from "../core/errors.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { sleep } from "../core/periodic.js";
import { isEmbeddedUrl } from "../db/embedded/embedded-url.js";
import { SessionLock, type SessionLockState } from "../db/session-lock.js";
import { previousRunVerdict, type PreviousRunFacts } from "../logic/node-id-claim.js";
import type { ClusterStore } from "../store/job-store.js";
import type { NodeInfo } from "../store/cluster/node-sql.js";

/** What a {@link NodeIdGuard} is built from. */
export interface NodeIdGuardDeps {
  store: Pick<ClusterStore, "readNode" | "schema">;
  nodeId: string;
  /** This run's node info: the guard sets its `idLock`, which every heartbeat publishes. */
  info: NodeInfo;
  clock: Clock;
  logger: Logger;
  deadNodeThresholdMs: number;
  heartbeatIntervalMs: number;
  /**
   * A connection string that reaches PostgreSQL itself (not a transaction pooler), for the lock's own
   * session; absent (or an embedded database), the guard judges by the heartbeat alone.
   */
  lockConnectionString?: string | undefined;
}

/** Guards one node id for one run (see the file's summary). */
export class NodeIdGuard {
  private readonly lock: SessionLock | null;
  /** A retake started by keep(), until it settles. */
  private retaking: Promise<void> | null = null;

  constructor(private readonly deps: NodeIdGuardDeps) {
    const url = deps.lockConnectionString;
    this.lock =
      url && !isEmbeddedUrl(url)
        ? new SessionLock(url, `pawl.node.${deps.store.schema}`, deps.nodeId, deps.logger, "pawl-node-id")
        : null;
    deps.info.idLock = false;
  }

  /**
   * Makes sure no live process runs under the node id, waiting at most a dead-node threshold plus one
   * heartbeat interval for a previous run's heartbeat to go stale.
   *
   * @throws NodeIdInUseError when the id's row beats on (or keeps its lock and its heartbeat until the
   *   wait ends); database errors as they come.
   */
  async claim(): Promise<void> {
    const { store, nodeId, clock, logger, deadNodeThresholdMs, heartbeatIntervalMs } = this.deps;
    const giveUpAt = clock.now() + deadNodeThresholdMs + heartbeatIntervalMs;
    let firstBeat: number | null = null;
    let warned = false;
    for (;;) {
      const lock = await this.retake();
      const { node, databaseTime } = await store.readNode(nodeId);
      if (node && firstBeat === null) firstBeat = node.heartbeatAt.getTime();
      const facts: PreviousRunFacts | null = node && {
        instance: node.info.instance,
        declaredDead: node.info.deadAt !== undefined,
        ageMs: databaseTime.getTime() - node.heartbeatAt.getTime(),
        heldIdLock: node.info.idLock === true,
        beatSinceFirstRead: firstBeat !== null && node.heartbeatAt.getTime() !== firstBeat,
      };
      const verdict = previousRunVerdict(facts, lock, this.deps.info.instance, deadNodeThresholdMs);
      if (verdict === "proceed") return;
      if (verdict === "refuse" || clock.now() >= giveUpAt) {
        throw new NodeIdInUseError(nodeId, { host: node?.info.host ?? "?", pid: node?.info.pid ?? 0 });
      }
      if (!warned) {
        warned = true;
        logger.warn("another run of this node id beat recently; waiting for its heartbeat to go stale", {
          host: node?.info.host,
          pid: node?.info.pid,
        });
      }
      await sleep(clock, Math.min(heartbeatIntervalMs, 500));
    }
  }

  /**
   * Starts retaking the lock if its connection was lost (called before each heartbeat), and keeps
   * `info.idLock` current. Never waits for it and never throws: a connect that hangs on a broken network
   * must not delay the heartbeat, or the node would look dead to the others.
   */
  keep(): void {
    this.deps.info.idLock = this.lock?.held ?? false;
    if (!this.lock || this.lock.held || this.retaking) return;
    this.retaking = this.retake()
      .then((state) => {
        if (state !== "busy") return;
        this.deps.logger.warn(
          "another session holds this node id's lock: is a second process running under it?",
          {
            nodeId: this.deps.nodeId,
          },
        );
      })
      .catch(() => {})
      .finally(() => (this.retaking = null));
  }

  /** Ends the lock's session (after the node removed its row). Never throws. */
  async release(): Promise<void> {
    this.deps.info.idLock = false;
    await this.lock?.close();
    await this.retaking;
  }

  private async retake(): Promise<SessionLockState> {
    const state = this.lock ? await this.lock.ensure() : "unavailable";
    this.deps.info.idLock = state === "acquired";
    return state;
  }
}

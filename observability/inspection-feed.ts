/**
 * One observation of a node's actor system, shared by everything in `pawl/observability` that follows it:
 * the inspector's SSE streams and the Stately inspector bridge. The durable machines running on the node
 * are actors of their own, outside the node's system (src/node/machines/machine-runner.ts): the feed follows
 * them too, through the runtime's `machines`, into the same listeners. Each consumer adds a listener; the feed is
 * subscribed to `system.inspect` only while it has at least one listener and the node runs, so a node
 * nobody watches pays nothing, and two consumers cost one subscription, not two.
 *
 * The feed of a node is kept beside it (a WeakMap keyed by the node object), so every consumer of one
 * node finds the same feed without being handed it.
 */
import type { InspectionEvent } from "xstate";
import type { PawlEventName, PawlEvents } from "../src/index.js";
import type { InspectableRuntime } from "./actor-view.js";
import type { InspectionOrigin } from "./user-data.js";

/** What the feed needs of a node: a {@link Pawl} satisfies it. */
export interface FeedNode {
  readonly nodeRuntime: InspectableRuntime | null;
  on<E extends PawlEventName>(name: E, listener: (payload: PawlEvents[E]) => void): () => void;
}

/**
 * A listener of the feed: called inside the actors' transitions, so it should be quick. `origin` says
 * whether the event is of the node's own actors or of a durable machine's (whose data is the user's:
 * user-data.ts).
 */
export type InspectionListener = (event: InspectionEvent, origin: InspectionOrigin) => void;

/** The shared observation of one node's actor system. */
export interface InspectionFeed {
  /**
   * Adds a listener; returns the function that removes it. Listening subscribes the feed to the actor
   * system now if the node runs, else when it starts. A listener that throws is ignored (the actors and
   * the other listeners carry on).
   */
  listen(listener: InspectionListener): () => void;
  /** Whether the feed is subscribed to the actor system now. */
  readonly subscribed: boolean;
}

const feeds = new WeakMap<FeedNode, InspectionFeed>();

/** The feed of `node` (created on first use, then the same one for every caller). */
export function inspectionFeed(node: FeedNode): InspectionFeed {
  let feed = feeds.get(node);
  if (feed === undefined) {
    feed = createFeed(node);
    feeds.set(node, feed);
  }
  return feed;
}

function createFeed(node: FeedNode): InspectionFeed {
  const listeners = new Set<InspectionListener>();
  /** The node's actor system's subscription and its durable machines' (which run outside that system). */
  let subscription: { unsubscribe(): void }[] | null = null;
  let offNode: (() => void) | null = null;

  const dispatch = (e: InspectionEvent, origin: InspectionOrigin) => {
    for (const l of listeners) {
      try {
        l(e, origin);
      } catch {
        // Runs inside the actors' transitions: nothing may throw into them.
      }
    }
  };

  const attach = () => {
    if (subscription !== null || listeners.size === 0) return;
    const rt = node.nodeRuntime;
    if (!rt) return;
    subscription = [rt.root.system.inspect((e) => dispatch(e, "node"))];
    if (rt.machines) subscription.push(rt.machines.inspect((e) => dispatch(e, "machine")));
  };

  const detach = () => {
    for (const s of subscription ?? []) s.unsubscribe();
    subscription = null;
  };

  return {
    listen(listener) {
      listeners.add(listener);
      if (offNode === null) {
        const offStarted = node.on("node:started", attach);
        const offStopped = node.on("node:stopped", detach);
        offNode = () => {
          offStarted();
          offStopped();
        };
      }
      attach();
      return () => {
        if (!listeners.delete(listener) || listeners.size > 0) return;
        detach();
        offNode?.();
        offNode = null;
      };
    },
    get subscribed() {
      return subscription !== null;
    },
  };
}

/**
 * The opt-in bridge to Stately's inspector: a node's live actor system in the visual inspector xstate
 * users know (state diagrams, sequence of events), through `@statelyai/inspect`, an optional peer
 * dependency loaded only when {@link connectStatelyInspector} is called.
 *
 * - It follows the node's inspection feed (inspection-feed.ts), the same single observation the
 *   inspector's SSE stream uses, not a second subscription.
 * - Every event and snapshot is sanitised by the SSE stream's own function (`serializeInspectionEvent`,
 *   `sanitizeSnapshot` in sanitize.ts) before `@statelyai/inspect` sees it: payloads and results
 *   redacted unless `includePayloads`, strings, arrays and depth bounded, no functions or cycles. The
 *   package then turns these sanitised events into its wire format (`inspect.next`), so what reaches the
 *   inspector is what the SSE stream shows.
 * - Actors alive when the bridge connects are announced first, so the inspector knows them.
 * - Durable machines (`registerMachine`) show too (stately-machines.ts): a running one is an actor of its own
 *   whose events come through the same feed; the parked ones, held only in PostgreSQL, are read from the
 *   store each time the relay connection opens and on `refresh()`, at most `maxParkedMachines` of them.
 * - The transport (stately-socket.ts) never throws into the host and stops for good on `close()`.
 * - A relay beyond loopback needs a `token` (sent as a Bearer header on the WebSocket upgrade); without
 *   one the bridge refuses to start (InsecureSurfaceError), as the console and the inspector do.
 */
import { createRequire } from "node:module";
import type { ActorRefLike, AnyActorRef, AnyEventObject, InspectionEvent } from "xstate";
import type * as StatelyInspect from "@statelyai/inspect";
import { importOptional } from "../src/core/errors.js";
import { moduleLocation } from "../src/core/module-location.js";
import type { PawlEventName, PawlEvents } from "../src/index.js";
import type { InspectableRuntime } from "./actor-view.js";
import { redactUrl } from "../src/core/redact.js";
import { InsecureSurfaceError, isLoopback } from "./access.js";
import { inspectionFeed } from "./inspection-feed.js";
import { parkedMachines, type MachineSource } from "./machines-view.js";
import { liveMachineAnnouncements, parkedMachineEvents } from "./stately-machines.js";
import { sanitizeSnapshot, serializeInspectionEvent, type SanitizeOptions } from "./sanitize.js";
import {
  configWithoutUserData,
  snapshotWithoutUserData,
  withoutUserData,
  type InspectionOrigin,
} from "./user-data.js";
import { StatelySocket, type WebSocketClass } from "./stately-socket.js";

/** Options of {@link connectStatelyInspector}. */
export interface StatelyBridgeOptions {
  /**
   * The WebSocket of the inspector's relay. Default `ws://localhost:8080`, where
   * `createInspectorServer()` of `@statelyai/inspect/server` listens.
   */
  url?: string;
  /**
   * Include job payloads and handler results, and durable machines' contexts, events and outputs (as the
   * inspector's option). Default false: a machine is shown by its state values, statuses and event types.
   */
  includePayloads?: boolean;
  /** Keep only actors whose id starts with one of these (as the stream's `?actor=`). Default: all. */
  actors?: string[];
  /** Events kept while the relay is not connected (the oldest dropped). Default 200. */
  maxDeferredEvents?: number;
  /** Events are dropped while the socket holds more unsent bytes than this. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Delay before reconnecting to a relay that is down. Default 5,000 ms. */
  reconnectMs?: number;
  /** Told once per outage when the relay cannot be reached. Default: nothing. */
  onError?: (error: unknown) => void;
  /**
   * The most parked durable machines shown: the newest (by job id) among the machines that have not ended,
   * read from the store when the relay connection opens and on {@link StatelyBridge.refresh}. 0 shows none.
   * Default 100, at most 499.
   */
  maxParkedMachines?: number;
  /**
   * Sent as `Authorization: Bearer <token>` when connecting to the relay. Required for a relay beyond
   * loopback: the bridge refuses to send a node's actor system to another host unauthenticated.
   */
  token?: string;
}

/** What {@link connectStatelyInspector} returns. */
export interface StatelyBridge {
  /** The relay's URL. */
  readonly url: string;
  /** Whether the WebSocket to the relay is open now. */
  readonly connected: boolean;
  /** Events sent to the relay, and events dropped (disconnected too long, or a full socket). */
  readonly sent: number;
  readonly dropped: number;
  /**
   * Reads the parked durable machines from the store again and sends each one's current snapshot (it is
   * done each time the relay connection opens). Resolves to how many were sent; 0 once closed.
   */
  refresh(): Promise<number>;
  /** Stops following the node and closes the socket for good. Idempotent. */
  close(): void;
}

/** The slice of a {@link Pawl} the bridge needs (the store for the parked machines, when it has one). */
export interface StatelyBridgeNode extends MachineSource {
  readonly nodeRuntime: InspectableRuntime | null;
  on<E extends PawlEventName>(name: E, listener: (payload: PawlEvents[E]) => void): () => void;
}

/** The two things the bridge takes from the optional packages. */
export interface StatelyModules {
  createInspector: typeof StatelyInspect.createInspector;
  WebSocket: WebSocketClass;
}

const feature = "the Stately inspector bridge (connectStatelyInspector)";

/** Loads `@statelyai/inspect`, and `ws` as that package resolves it (it is its dependency). */
export async function loadStatelyModules(
  load: () => Promise<typeof StatelyInspect> = () => import("@statelyai/inspect"),
): Promise<StatelyModules> {
  const lib = await importOptional("@statelyai/inspect", feature, load);
  // Resolved from the package's own folder, so it is found under pnpm's strict layout too.
  const fromLib = createRequire(createRequire(moduleLocation()).resolve("@statelyai/inspect"));
  const WebSocket = fromLib("ws") as WebSocketClass;
  return { createInspector: lib.createInspector, WebSocket };
}

/**
 * Shows a node's live actor system in Stately's inspector. Needs the optional peer `@statelyai/inspect`
 * (`npm install @statelyai/inspect`); without it, rejects with a `MissingDependencyError` naming it.
 *
 * @example
 * ```ts
 * import { createInspectorServer } from "@statelyai/inspect/server";
 * import { connectStatelyInspector } from "pawl/observability";
 * createInspectorServer({ port: 8080 }); // opens the inspector in a browser
 * const bridge = await connectStatelyInspector(pawl, { url: "ws://localhost:8080" });
 * // ... later
 * bridge.close();
 * ```
 */
export async function connectStatelyInspector(
  pawl: StatelyBridgeNode,
  options: StatelyBridgeOptions = {},
): Promise<StatelyBridge> {
  return bridgeWith(await loadStatelyModules(), pawl, options);
}

/** The bridge over modules already loaded ({@link connectStatelyInspector} without the loading). */
export function bridgeWith(
  modules: StatelyModules,
  pawl: StatelyBridgeNode,
  options: StatelyBridgeOptions = {},
): StatelyBridge {
  const url = options.url ?? "ws://localhost:8080";
  checkRelay(url, options.token);
  const maxParked = options.maxParkedMachines ?? 100;
  if (!Number.isInteger(maxParked) || maxParked < 0 || maxParked > 499)
    throw new TypeError("connectStatelyInspector: maxParkedMachines must be a whole number from 0 to 499");
  const onError = options.onError ?? (() => {});
  const tell = (error: unknown) => {
    try {
      onError(error);
    } catch {
      // The host's handler failed; the bridge carries on.
    }
  };
  const sanitizing: SanitizeOptions = { includePayloads: options.includePayloads ?? false };
  const prefixes = (options.actors ?? []).filter((p) => p.length > 0);
  const socket = new StatelySocket(modules.WebSocket, {
    url,
    maxDeferred: options.maxDeferredEvents ?? 200,
    maxBufferedBytes: options.maxBufferedBytes ?? 1024 * 1024,
    reconnectMs: options.reconnectMs ?? 5_000,
    onError,
    headers: options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` },
    // A relay (re)connected gets the parked machines as they are now; a failed read is told to onError,
    // and an onError that throws is dropped here: nothing awaits this promise, so it would be unhandled.
    onOpen: () => void refresh().catch(tell),
  });
  const stately = modules.createInspector(socket, { autoStart: false });
  let closed = false;

  const kept = (ref: unknown): boolean => {
    if (prefixes.length === 0) return true;
    const id = idOf(ref);
    return prefixes.some((p) => id.startsWith(p));
  };

  const forward = (e: InspectionEvent, origin: InspectionOrigin) => {
    if (closed) return;
    // An actor is announced before it has its system id, so registrations are never filtered out.
    if (e.type !== "@xstate.actor" && !kept(e.actorRef)) return;
    // A durable machine's context, events and outputs are the user's data (user-data.ts).
    const userData = origin === "machine" && sanitizing.includePayloads !== true;
    const safe = sanitized(userData ? withoutUserData(e) : e, sanitizing, userData);
    if (safe !== null) stately.inspect.next?.(safe);
  };

  /** The actors already alive: the root, then every actor with a system id, parents before children. */
  const announce = () => {
    const rt = pawl.nodeRuntime;
    if (!rt || closed) return;
    const root = rt.root as unknown as AnyActorRef;
    const keyed = Object.values(
      (rt.root.system as { getAll?: () => Record<string, AnyActorRef> }).getAll?.() ?? {},
    );
    const depth = (a: AnyActorRef) => {
      let d = 0;
      for (let p = parentOf(a); p !== undefined; p = parentOf(p)) d++;
      return d;
    };
    const actors = [root, ...keyed.filter((a) => a !== root).sort((x, y) => depth(x) - depth(y))];
    for (const actorRef of actors)
      forward({ type: "@xstate.actor", actorRef, rootId: root.sessionId }, "node");
    for (const e of liveMachineAnnouncements(rt)) forward(e, "machine");
  };

  /** Sends a stand-in of each parked machine (stately-machines.ts), read from the store now. */
  async function refresh(): Promise<number> {
    if (closed) return 0;
    const parked = await parkedMachines(pawl, maxParked);
    let sent = 0;
    for (const machine of parked) {
      if (closed) break;
      for (const e of parkedMachineEvents(machine, pawl.nodeRuntime)) forward(e, "machine");
      sent++;
    }
    return sent;
  }

  socket.start();
  const stopListening = inspectionFeed(pawl).listen(forward);
  const offStarted = pawl.on("node:started", announce);
  announce();

  return {
    url,
    get connected() {
      return socket.connected;
    },
    get sent() {
      return socket.sent;
    },
    get dropped() {
      return socket.dropped;
    },
    refresh,
    close() {
      if (closed) return;
      closed = true;
      stopListening();
      offStarted();
      socket.stop();
    },
  };
}

/**
 * The inspection event as `@statelyai/inspect` should see it: the same event with its event and snapshot
 * replaced by the SSE stream's sanitised ones, and its actors by stand-ins that carry only what the
 * package reads (ids, parent, the machine's definition, and a sanitised snapshot). Action and microstep
 * events, which the package does not show, are left out (null).
 */
function sanitized(e: InspectionEvent, options: SanitizeOptions, userData: boolean): InspectionEvent | null {
  switch (e.type) {
    case "@xstate.actor":
      return { ...e, actorRef: standIn(e.actorRef, options, userData) as AnyActorRef };
    case "@xstate.event": {
      const record = serializeInspectionEvent(e, options);
      return {
        ...e,
        actorRef: standIn(e.actorRef, options, userData) as AnyActorRef,
        sourceRef:
          e.sourceRef === undefined ? undefined : (standIn(e.sourceRef, options, userData) as AnyActorRef),
        event: record.event as AnyEventObject,
      };
    }
    case "@xstate.snapshot": {
      const record = serializeInspectionEvent(e, options);
      return {
        ...e,
        actorRef: standIn(e.actorRef, options, userData) as AnyActorRef,
        event: record.event as AnyEventObject,
        snapshot: record.snapshot as unknown as typeof e.snapshot,
      };
    }
    default:
      return null;
  }
}

/**
 * What `@statelyai/inspect` reads of an actor: `id`, `sessionId`, the parent's `sessionId`, the machine's
 * config (its definition, drawn as the diagram) and `getSnapshot()`. The snapshot is read when the package
 * asks (it defers the conversion; an actor's first snapshot does not exist yet when it is announced) and
 * sanitised like the stream's.
 */
function standIn(ref: ActorRefLike, options: SanitizeOptions, userData: boolean): object {
  const parent = parentOf(ref);
  const raw = (ref as { logic?: { config?: unknown } }).logic?.config;
  // A durable machine's definition may carry an initial context with values in it: drawn without it.
  const config = userData ? configWithoutUserData(raw) : raw;
  return {
    // Read late too: the system id is assigned just after the actor is announced.
    get id() {
      return idOf(ref);
    },
    sessionId: ref.sessionId,
    _parent: parent === undefined ? undefined : { sessionId: parent.sessionId },
    logic: typeof config === "object" && config !== null ? { config } : {},
    getSnapshot: () => {
      try {
        const snapshot: unknown = ref.getSnapshot();
        return sanitizeSnapshot(userData ? snapshotWithoutUserData(snapshot) : snapshot, options);
      } catch {
        return { value: null, status: null, context: null };
      }
    },
  };
}

/**
 * Refuses a relay URL that is not a WebSocket URL, and a relay beyond loopback without a token.
 *
 * @throws TypeError for a URL that does not parse or is not ws:/wss:, or an empty token.
 * @throws InsecureSurfaceError for a relay on another host without a token.
 */
function checkRelay(url: string, token: string | undefined): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`connectStatelyInspector: url "${redactUrl(url)}" is not a URL`);
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:")
    throw new TypeError(`connectStatelyInspector: url "${redactUrl(url)}" is not a ws: or wss: URL`);
  if (token !== undefined && token.length === 0)
    throw new TypeError("connectStatelyInspector: token is empty");
  if (token === undefined && !isLoopback(parsed.hostname)) {
    throw new InsecureSurfaceError(
      `connectStatelyInspector: the relay ${parsed.host} is beyond loopback and no token is given: ` +
        `pass { token } (sent as a Bearer header), or run the relay on this machine`,
    );
  }
}

function parentOf(ref: ActorRefLike): AnyActorRef | undefined {
  return (ref as { _parent?: AnyActorRef })._parent;
}

/** The id an actor is known by: its system id (`slot-3`, `poller`) or its local id. */
function idOf(ref: unknown): string {
  const r = (ref ?? {}) as { systemId?: unknown; id?: unknown };
  return typeof r.systemId === "string" ? r.systemId : typeof r.id === "string" ? r.id : "";
}

/**
 * The actor inspector: an opt-in HTTP debug endpoint for a live node.
 *
 * - `GET /debug/actors`: the actor tree and the busy slots as JSON (see actor-view.ts).
 * - `GET /debug/actors/stream`: xstate inspection events as Server-Sent Events, one JSON object per
 *   `data:` line, sanitised (no payloads unless asked, no functions, no cycles). `?actor=slot-,poller`
 *   keeps actors whose id starts with one of the prefixes; `?types=event,snapshot` picks the kinds
 *   (default actor, event, snapshot; also action, microstep).
 *
 * Nothing is mounted unless the user mounts {@link Inspector.handler}. With a `token`, every request must
 * carry it (`Authorization: Bearer <token>`, or the console's session cookie), else 401; without one the
 * inspector answers only on loopback, and a `Host` outside the allowlist gets 421 (access.ts). At most
 * `maxStreams` streams are open at once (503 past it). Inspection stays cheap: the
 * inspector listens to the node's inspection feed (inspection-feed.ts, shared with the Stately bridge)
 * only while at least one stream is open, and serialises each event once for all streams. A stream that cannot keep up drops events (and says how many) rather
 * than buffer without bound.
 */
import type { ServerResponse } from "node:http";
import type { InspectionEvent } from "xstate";
import type { PawlEventName, PawlEvents } from "../src/index.js";
import { refusal, tokenCheck } from "./access.js";
import { actorsView, type InspectorSource } from "./actor-view.js";
import { machinesView } from "./machines-view.js";
import {
  guardHandler,
  requestUrl,
  surfaceLogger,
  type RequestHandler,
  type SurfaceLogger,
} from "./http-guard.js";
import { inspectionFeed } from "./inspection-feed.js";
import { inspectionKinds, serializeInspectionEvent, type InspectionKind } from "./sanitize.js";
import { withoutUserData, type InspectionOrigin } from "./user-data.js";

export type {
  ActorsView,
  BusySlot,
  InspectorSource,
  InspectableMachines,
  InspectableRuntime,
} from "./actor-view.js";
export type { MachineActorView, MachinesView, MachineSource } from "./machines-view.js";
export type { RequestHandler, SurfaceLogger } from "./http-guard.js";

/** Options of {@link createInspector}. */
export interface InspectorOptions {
  /**
   * A bearer token every request must carry (the header, or the console's session cookie; never the
   * URL). Without one the inspector answers only connections that arrived on loopback.
   */
  token?: string;
  /** Host names (besides the bound address, `localhost`, `127.0.0.1` and `[::1]`) a request's `Host` may name. */
  allowedHosts?: string[];
  /** Streams open at once; one more is answered 503. Default 16. */
  maxStreams?: number;
  /** Where failures answered with a 500 are logged; `false` for nowhere. Default: stderr, warnings and up. */
  logger?: SurfaceLogger;
  /**
   * Include job payloads and handler results in the views, and durable machines' contexts, events and
   * outputs in the stream. Default false: a machine is streamed by its state values and event types.
   */
  includePayloads?: boolean;
  /** The path of the tree; the stream is at `<basePath>/stream`. Default `/debug/actors`. */
  basePath?: string;
  /** A stream whose unsent output exceeds this many bytes drops events until it drains. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Interval of SSE keep-alive comments (ms). Default 15,000. */
  keepAliveMs?: number;
  /** The most durable machines the tree's `machines` lists (read from the store). Default 100, at most 499. */
  maxMachines?: number;
}

/** What {@link createInspector} returns. */
export interface Inspector {
  /**
   * Serves `GET <basePath>` and `GET <basePath>/stream`; any other path goes to `next` (404 without one).
   * Mount it on a node:http server, or with `app.use(inspector.handler)` in Express.
   */
  readonly handler: RequestHandler;
  /** Open streams. */
  readonly streams: number;
  /** Whether requests need a token (else the inspector answers only on loopback). */
  readonly tokenRequired: boolean;
  /** Whether the inspector is subscribed to the actor system's inspection events now. */
  readonly subscribed: boolean;
  /** Ends every stream and unsubscribes. Idempotent. */
  close(): void;
}

/** The slice of a {@link Pawl} the inspector needs. */
export interface InspectorNode extends InspectorSource {
  on<E extends PawlEventName>(name: E, listener: (payload: PawlEvents[E]) => void): () => void;
}

interface Stream {
  res: ServerResponse;
  prefixes: string[];
  kinds: Set<string>;
  dropped: number;
}

const defaultKinds: InspectionKind[] = ["actor", "event", "snapshot"];

/**
 * Creates the actor inspector of a node.
 *
 * @example
 * ```ts
 * const inspector = createInspector(pawl, { token: process.env.PAWL_INSPECT_TOKEN });
 * http.createServer((req, res) => inspector.handler(req, res, () => app(req, res))).listen(8080);
 * // then: npx pawl inspect http://localhost:8080 --token "$PAWL_INSPECT_TOKEN" --follow
 * ```
 */
export function createInspector(pawl: InspectorNode, options: InspectorOptions = {}): Inspector {
  const basePath = (options.basePath ?? "/debug/actors").replace(/\/+$/, "");
  const includePayloads = options.includePayloads ?? false;
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const tokens = tokenCheck("createInspector", options.token);
  const allowedHosts = options.allowedHosts ?? [];
  const maxStreams = options.maxStreams ?? 16;
  if (!Number.isInteger(maxStreams) || maxStreams < 0)
    throw new TypeError("createInspector: maxStreams must be a whole number >= 0");
  const log = surfaceLogger(options.logger);
  const maxMachines = options.maxMachines ?? 100;
  if (!Number.isInteger(maxMachines) || maxMachines < 0 || maxMachines > 499)
    throw new TypeError("createInspector: maxMachines must be a whole number from 0 to 499");

  const streams = new Set<Stream>();
  const feed = inspectionFeed(pawl);
  let stopListening: (() => void) | null = null;
  let keepAlive: ReturnType<typeof setInterval> | null = null;
  let seq = 0;
  let closed = false;

  const onInspection = (e: InspectionEvent, origin: InspectionOrigin) => {
    // Runs inside the actors' transitions: it must never throw into them.
    try {
      const kind = e.type.slice("@xstate.".length);
      const id = actorOf(e);
      let data: string | null = null;
      for (const s of streams) {
        if (!s.kinds.has(kind)) continue;
        if (s.prefixes.length > 0 && !s.prefixes.some((p) => id.startsWith(p))) continue;
        data ??= JSON.stringify(
          serializeInspectionEvent(origin === "machine" && !includePayloads ? withoutUserData(e) : e, {
            includePayloads,
          }),
        );
        write(s, `id: ${++seq}\ndata: ${data}\n\n`);
      }
    } catch {
      // A broken stream is dropped by its close handler; the actors carry on.
    }
  };

  /** Writes to a stream unless its unsent output is over the cap (then counts a drop). */
  const write = (s: Stream, chunk: string) => {
    if (s.res.destroyed || s.res.writableEnded) return;
    if (s.res.writableLength > maxBuffered) {
      s.dropped++;
      return;
    }
    if (s.dropped > 0) {
      s.res.write(`event: dropped\ndata: ${JSON.stringify({ dropped: s.dropped })}\n\n`);
      s.dropped = 0;
    }
    s.res.write(chunk);
  };

  const attach = () => {
    if (stopListening !== null || streams.size === 0) return;
    if (!pawl.nodeRuntime) return;
    stopListening = feed.listen(onInspection);
    keepAlive = setInterval(() => {
      // A keep-alive is skipped, not queued, on a stream over its buffer cap: the stream is plainly alive.
      for (const s of streams) {
        if (s.res.writableLength <= maxBuffered && !s.res.destroyed && !s.res.writableEnded)
          s.res.write(": keep-alive\n\n");
      }
    }, keepAliveMs);
    keepAlive.unref?.();
  };

  const detach = () => {
    stopListening?.();
    stopListening = null;
    if (keepAlive !== null) clearInterval(keepAlive);
    keepAlive = null;
  };

  const endAll = () => {
    for (const s of [...streams]) s.res.end();
    streams.clear();
    detach();
  };

  const offStopped = pawl.on("node:stopped", endAll);

  const openStream = (res: ServerResponse, url: URL) => {
    if (!pawl.running || !pawl.nodeRuntime) {
      json(res, 503, { error: "the node is not running" });
      return;
    }
    if (streams.size >= maxStreams) {
      res.setHeader("Retry-After", "5");
      json(res, 503, { error: `too many streams (maxStreams ${maxStreams})` });
      return;
    }
    const prefixes = url.searchParams
      .getAll("actor")
      .flatMap((a) => a.split(","))
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    const requested = url.searchParams
      .getAll("types")
      .flatMap((t) => t.split(","))
      .map((t) => t.trim().replace(/^@xstate\./, ""));
    const unknown = requested.filter((t) => t && !(inspectionKinds as readonly string[]).includes(t));
    if (unknown.length > 0) {
      json(res, 400, { error: `unknown types: ${unknown.join(", ")}; use ${inspectionKinds.join(", ")}` });
      return;
    }
    const kinds = new Set<string>(
      requested.filter(Boolean).length > 0 ? requested.filter(Boolean) : defaultKinds,
    );
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    res.write(
      `event: hello\ndata: ${JSON.stringify({ nodeId: pawl.nodeId, actor: prefixes, types: [...kinds] })}\n\n`,
    );
    const stream: Stream = { res, prefixes, kinds, dropped: 0 };
    streams.add(stream);
    attach();
    const leave = () => {
      if (!streams.delete(stream)) return;
      if (streams.size === 0) detach();
    };
    // The response closes when the client goes away (or the stream is ended). Not the request's own
    // "close": middleware that drains a GET's (empty) body would fire it at once.
    res.on("close", leave);
  };

  const handler = guardHandler(
    "inspector",
    (req, res, next) => {
      const url = requestUrl(req);
      const path = url.pathname.replace(/\/+$/, "");
      const isTree = path === basePath;
      const isStream = path === `${basePath}/stream`;
      if (!isTree && !isStream) {
        if (next) next();
        else json(res, 404, { error: "not found" });
        return;
      }
      const refused = refusal(req, tokens, allowedHosts);
      if (refused !== null) {
        json(res, refused.status, { error: refused.message });
        return;
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.setHeader("Allow", "GET, HEAD");
        json(res, 405, { error: "method not allowed" });
        return;
      }
      if (!tokens.accepts(req)) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="pawl inspector"');
        json(res, 401, { error: "a valid token is required (Authorization: Bearer)" });
        return;
      }
      if (closed) {
        json(res, 503, { error: "the inspector is closed" });
        return;
      }
      if (isStream) return openStream(res, url);
      return tree(res);
    },
    log,
  );

  /** The tree, with the durable machines read from the store (a failed read is the guard's answer). */
  async function tree(res: ServerResponse) {
    const view = actorsView(pawl, includePayloads);
    const machines = maxMachines > 0 ? await machinesView(pawl, maxMachines) : null;
    json(res, 200, machines ? { ...view, machines } : view);
  }

  return {
    handler,
    get streams() {
      return streams.size;
    },
    tokenRequired: tokens.required,
    get subscribed() {
      return stopListening !== null && feed.subscribed;
    },
    close() {
      if (closed) return;
      closed = true;
      offStopped();
      endAll();
    },
  };
}

function actorOf(e: InspectionEvent): string {
  const r = e.actorRef as { systemId?: unknown; id?: unknown };
  return typeof r.systemId === "string" ? r.systemId : typeof r.id === "string" ? r.id : "";
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Cache-Control": "no-store",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

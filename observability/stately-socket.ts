/**
 * The Stately bridge's transport: a `@statelyai/inspect` adapter that sends each inspection event as one
 * JSON text message over a WebSocket to the inspector's relay (`createInspectorServer` of
 * `@statelyai/inspect/server`, or anything speaking the same).
 *
 * Why not the package's own `createWebSocketInspector`: its adapter reconnects on a timer that is not
 * unref'd and that `stop()` does not cancel, so with the relay down it would hold the host process open
 * and go on reconnecting every 5 s after the bridge is closed. This one reconnects only until `stop()`,
 * on an unref'd timer, keeps at most `maxDeferred` events while disconnected (the oldest dropped), drops
 * events while the socket's unsent output is over `maxBufferedBytes` (counted, like the SSE stream), and
 * never throws into the actors.
 */
import type WebSocket from "ws";

/** The WebSocket class (the `ws` package's). */
export type WebSocketClass = typeof WebSocket;

/** Options of {@link StatelySocket}. */
export interface StatelySocketOptions {
  url: string;
  /** Events kept while not connected, sent on connect. */
  maxDeferred: number;
  /** Events are dropped while the socket holds more unsent bytes than this. */
  maxBufferedBytes: number;
  /** Delay before reconnecting after the connection failed or closed. */
  reconnectMs: number;
  /** Told once per outage (the first failure after a connection, or the first ever). */
  onError: (error: unknown) => void;
  /** Headers of the WebSocket upgrade request (the relay's `Authorization`). */
  headers?: Record<string, string>;
  /** Called each time the connection opens, after the deferred events are sent. Must not throw. */
  onOpen?: () => void;
}

/** A `@statelyai/inspect` Adapter over a WebSocket (see the file's comment). */
export class StatelySocket {
  /** Events sent, and events dropped (full buffer, or too many while disconnected). */
  sent = 0;
  dropped = 0;
  private ws: WebSocket | null = null;
  private open = false;
  private stopped = false;
  private reported = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly deferred: string[] = [];

  constructor(
    private readonly WS: WebSocketClass,
    private readonly options: StatelySocketOptions,
  ) {}

  /** Whether the socket is connected now. */
  get connected(): boolean {
    return this.open;
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.open = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    try {
      ws?.terminate();
    } catch {
      // Already gone.
    }
  }

  /** Sends (or defers) one event; never throws. */
  send(event: unknown): void {
    try {
      const text = JSON.stringify(event);
      if (text === undefined) return;
      if (this.open && this.ws !== null) {
        if (this.ws.bufferedAmount > this.options.maxBufferedBytes) {
          this.dropped++;
          return;
        }
        this.ws.send(text);
        this.sent++;
        return;
      }
      this.deferred.push(text);
      if (this.deferred.length > this.options.maxDeferred) {
        this.deferred.shift();
        this.dropped++;
      }
    } catch {
      this.dropped++;
    }
  }

  private connect(): void {
    if (this.stopped) return;
    let ws: WebSocket;
    try {
      ws = new this.WS(this.options.url, { headers: this.options.headers ?? {} });
    } catch (error) {
      this.fail(error);
      return;
    }
    this.ws = ws;
    ws.on("open", () => {
      if (this.ws !== ws) return;
      this.open = true;
      this.reported = false;
      for (const text of this.deferred.splice(0)) {
        try {
          ws.send(text);
          this.sent++;
        } catch {
          this.dropped++;
        }
      }
      try {
        this.options.onOpen?.();
      } catch {
        // A throwing listener changes nothing.
      }
    });
    ws.on("error", (error) => {
      if (this.ws === ws) this.fail(error);
    });
    ws.on("close", () => {
      if (this.ws !== ws) return;
      this.open = false;
      this.ws = null;
      this.later();
    });
  }

  private fail(error: unknown): void {
    if (!this.reported) {
      this.reported = true;
      try {
        this.options.onError(error);
      } catch {
        // A throwing listener changes nothing.
      }
    }
    const ws = this.ws;
    this.ws = null;
    this.open = false;
    try {
      ws?.terminate();
    } catch {
      // Already gone.
    }
    this.later();
  }

  private later(): void {
    if (this.stopped || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, this.options.reconnectMs);
    this.timer.unref?.();
  }
}

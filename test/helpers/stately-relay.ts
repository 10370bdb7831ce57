/**
 * A stand-in for the Stately inspector's relay in the bridge tests: a `ws` server on localhost that records
 * every message the bridge sends, in `@statelyai/inspect`'s wire format.
 */
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** One message of the wire format, as far as the tests read it. */
export type RelayMessage = {
  type: string;
  name?: string;
  sessionId: string;
  parentId?: string;
  definition?: string;
  _version?: string;
  event?: { type?: string; outcome?: unknown } & Record<string, unknown>;
  snapshot?: { value?: unknown; status?: unknown; context?: unknown };
};

/** A relay on `port` (a free one by default) that records every message. */
export async function relay(port = 0) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  const messages: RelayMessage[] = [];
  const sockets = new Set<WebSocket>();
  const authorizations: (string | undefined)[] = [];
  let connections = 0;
  wss.on("connection", (ws, req) => {
    connections++;
    authorizations.push(req.headers.authorization);
    sockets.add(ws);
    ws.on("close", () => sockets.delete(ws));
    ws.on("message", (data) => messages.push(JSON.parse(String(data)) as RelayMessage));
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    messages,
    sockets,
    authorizations,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((r) => wss.close(() => r())),
  };
}

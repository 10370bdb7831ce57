/**
 * Raw HTTP over a TCP socket, for requests `fetch` refuses to send: a malformed request line, header or
 * cookie reaches the server as written. The answer is the status line (or null when the server closed
 * the connection without one) and the raw bytes received.
 */
import { connect } from "node:net";

/** What a raw request got back. */
export interface RawAnswer {
  /** The status code of the first status line, or null when the connection closed without one. */
  status: number | null;
  /** Everything the server sent, as latin1 text. */
  text: string;
}

/**
 * Sends `bytes` to 127.0.0.1:`port` and resolves with the first answer once it is complete (by its
 * Content-Length, its last chunk, or the headers alone for HEAD, 1xx/204/304 and event streams), or
 * when the server closes the connection. The socket is not half-closed: Node's server aborts a request
 * whose client sent FIN. So `bytes` must be a complete request (or bytes the server refuses); the timeout
 * only guards a hung server, where the test then fails, never a wait on purpose.
 */
export function rawRequest(port: number, bytes: string | Uint8Array, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    const head = (typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("latin1")).slice(0, 8);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString("latin1");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : null, text });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(String(bytes).slice(0, 80))}`));
    }, timeoutMs);
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      if (complete(Buffer.concat(chunks).toString("latin1"), head.startsWith("HEAD"))) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
    socket.on("connect", () => socket.write(bytes));
  });
}

/** Whether `text` holds one whole HTTP response. */
function complete(text: string, head: boolean): boolean {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const headers = text.slice(0, end);
  const body = text.slice(end + 4);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headers)?.[1] ?? 0);
  if (head || status < 200 || status === 204 || status === 304) return true;
  if (/\r\ncontent-type: *text\/event-stream/i.test(headers)) return true;
  const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
  if (length) return Buffer.byteLength(body, "latin1") >= Number(length[1]);
  if (/\r\ntransfer-encoding: *chunked/i.test(headers)) return /(^|\r\n)0\r\n\r\n$/.test(body);
  // Neither: the body ends when the server closes.
  return false;
}

/**
 * A fault-injecting TCP proxy between pawl and PostgreSQL (node:net), for the lost-reply tests
 * (test/processes/lost-replies.test.ts). It forwards bytes both ways and reads the wire protocol just enough
 * to know which statement each round trip carries: Parse (its name and text, remembered per connection),
 * Bind (which prepared statement runs), Query (simple protocol), Sync (the round trip is complete).
 *
 * On command ({@link FaultProxy.arm}) the next statements that match are let through to the server, which
 * runs and, outside a transaction, commits them; their reply is then dropped and the client's connection
 * reset (RST), which is what a TCP reset, a pooler restart or a NAT timeout does to a statement in flight.
 * The client sees ECONNRESET and cannot know whether its statement committed: it did.
 *
 * Assumes a plaintext connection (no SSLRequest), as the test database gives.
 */
import net from "node:net";

/** What a round trip carries: the statement's name (empty when unnamed) and text. */
export interface Statement {
  name: string;
  text: string;
}

/** A fault the proxy injected. */
export interface InjectedFault {
  kind: string;
  statement: Statement;
  /** When the server's reply (ReadyForQuery) was dropped and the client reset (Date.now()). */
  at: number;
}

interface Rule {
  kind: string;
  match: (s: Statement) => boolean;
  remaining: number;
}

/** Splits a byte stream into protocol messages (type byte + int32 length including itself). */
class Framer {
  private buf: Buffer = Buffer.alloc(0);
  /** Whether the next message is the startup message (no type byte). */
  constructor(private startup: boolean) {}

  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    for (;;) {
      if (this.startup) {
        if (this.buf.length < 4) break;
        const len = this.buf.readInt32BE(0);
        if (this.buf.length < len) break;
        out.push(this.buf.subarray(0, len));
        this.buf = this.buf.subarray(len);
        this.startup = false;
        continue;
      }
      if (this.buf.length < 5) break;
      const len = this.buf.readInt32BE(1) + 1;
      if (this.buf.length < len) break;
      out.push(this.buf.subarray(0, len));
      this.buf = this.buf.subarray(len);
    }
    return out;
  }
}

/** Reads a NUL-terminated string at `at`; returns it and the offset after the NUL. */
function cstring(b: Buffer, at: number): [string, number] {
  const end = b.indexOf(0, at);
  return [b.toString("utf8", at, end), end + 1];
}

/** The proxy. */
export class FaultProxy {
  private readonly rules: Rule[] = [];
  private readonly sockets = new Set<net.Socket>();
  /** Every fault injected, in order. */
  readonly faults: InjectedFault[] = [];
  private readonly listeners: ((f: InjectedFault) => void)[] = [];

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  /** Listens on a free port of 127.0.0.1, forwarding to `target`. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    let proxy: FaultProxy | null = null;
    const server = net.createServer((client) => proxy?.connection(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port);
    return proxy;
  }

  /** `url` (a postgres:// URL) pointed at this proxy. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  /** The next `times` round trips whose statement matches `match` commit and lose their reply. */
  arm(kind: string, match: (s: Statement) => boolean, times: number): void {
    this.rules.push({ kind, match, remaining: times });
  }

  /** Disarms what is left of `kind`'s rules. */
  disarm(kind: string): void {
    for (const r of this.rules) if (r.kind === kind) r.remaining = 0;
  }

  /** How many faults of `kind` were injected. */
  count(kind: string): number {
    return this.faults.filter((f) => f.kind === kind).length;
  }

  /** Calls `fn` with every fault as it is injected; returns the unsubscribe. */
  onFault(fn: (f: InjectedFault) => void): () => void {
    this.listeners.push(fn);
    return () => {
      const i = this.listeners.indexOf(fn);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Resolves once `n` faults of `kind` have been injected. */
  injected(kind: string, n: number): Promise<void> {
    if (this.count(kind) >= n) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.count(kind) < n) return;
        this.listeners.splice(this.listeners.indexOf(check), 1);
        resolve();
      };
      this.listeners.push(check);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private connection(client: net.Socket, target: { host: string; port: number }): void {
    const upstream = net.connect(target.port, target.host);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const prepared = new Map<string, string>();
    let current: Statement = { name: "", text: "" };
    let doomed: Rule | null = null;
    let doomedStatement: Statement = current;
    const fromClient = new Framer(true);
    const fromServer = new Framer(false);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    const decide = () => {
      if (doomed) return;
      const rule = this.rules.find((r) => r.remaining > 0 && r.match(current));
      if (!rule) return;
      rule.remaining--;
      doomed = rule;
      doomedStatement = current;
    };
    client.on("data", (chunk: Buffer) => {
      for (const m of fromClient.push(chunk)) {
        const type = String.fromCharCode(m[0] ?? 0);
        if (type === "P") {
          const [name, at] = cstring(m, 5);
          const [text] = cstring(m, at);
          prepared.set(name, text);
          current = { name, text };
        } else if (type === "B") {
          const [, at] = cstring(m, 5);
          const [name] = cstring(m, at);
          current = { name, text: prepared.get(name) ?? "" };
        } else if (type === "Q") {
          current = { name: "", text: cstring(m, 5)[0] };
          decide();
        } else if (type === "S") {
          decide();
        }
        upstream.write(m);
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      for (const m of fromServer.push(chunk)) {
        if (!doomed) {
          client.write(m);
          continue;
        }
        // The doomed round trip's reply is swallowed; at its ReadyForQuery the statement has run (and,
        // outside a transaction, committed): reset the client, as a broken network would.
        if (m[0] === "Z".charCodeAt(0)) {
          const fault: InjectedFault = { kind: doomed.kind, statement: doomedStatement, at: Date.now() };
          doomed = null;
          this.faults.push(fault);
          client.resetAndDestroy();
          upstream.destroy();
          for (const l of [...this.listeners]) l(fault);
          return;
        }
      }
    });
  }
}

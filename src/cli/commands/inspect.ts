/**
 * `pawl inspect <url>`: reads a running node's actor inspector (the opt-in endpoint of
 * `pawl/observability`'s createInspector) over HTTP and prints the actor tree; `--follow` then streams
 * the xstate inspection events it sends as Server-Sent Events. It needs no database: only the URL.
 */
import { flagOpt, intValue, jsonOption, stringOpt, UsageError, type ParsedArgs } from "../args.js";
import type { Command, CommandContext } from "../command.js";
import { cell, iso, json, plural } from "../format.js";

/** One actor as the inspector returns it (see src/node/inspect.ts). */
interface ActorJson {
  id: string;
  machine: string;
  state: unknown;
  status: string;
  context: Record<string, unknown>;
  children: ActorJson[];
  coordinator?: Record<string, unknown> | null;
  buffered?: number;
  pendingOutcomes?: number;
}

/** The document of `GET /debug/actors`. */
interface ActorsJson {
  nodeId: string;
  running: boolean;
  at: string;
  busy: {
    actor: string;
    step: unknown;
    job: { id: string; type: string; attempt: number };
    watchdog: { phase: string; deadline: number | null; remainingMs: number | null };
  }[];
  /** Rate-limit keys the node remembers as closed (absent from an older node). */
  rateLimits?: { key: string; openAt: number; closed: boolean; refused: number }[];
  tree: ActorJson | null;
}

/** Where the tree and the stream are, from the URL the user gave (a base URL or the endpoint itself). */
export function inspectorUrls(raw: string): { tree: URL; stream: URL } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(
      `${JSON.stringify(raw)} is not a URL; give the node's address, e.g. http://localhost:8080`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`the inspector URL must be http or https, not ${url.protocol}`);
  }
  let path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith("/stream")) path = path.slice(0, -"/stream".length);
  if (path === "") path = "/debug/actors";
  const tree = new URL(url);
  tree.pathname = path;
  const stream = new URL(tree);
  stream.pathname = `${path}/stream`;
  return { tree, stream };
}

/** Renders the tree for people: busy slots first, then every actor indented under its parent. */
export function renderActors(view: ActorsJson, now = Date.now()): string {
  const lines = [`node ${view.nodeId}  ${view.running ? "running" : "not running"}  (${view.at})`];
  if (!view.tree) return `${lines[0]}\nno actors: the node has not started`;
  lines.push(`busy: ${plural(view.busy.length, "slot")}`);
  for (const b of view.busy) {
    const wd = b.watchdog;
    const deadline =
      wd.deadline === null
        ? "no deadline yet"
        : `deadline ${iso(new Date(wd.deadline))} (${inSeconds(wd.deadline - now)})`;
    lines.push(
      `  ${b.actor}  job ${b.job.id} (${b.job.type}, attempt ${b.job.attempt})  step ${cell(b.step, 40)}  watchdog ${wd.phase}, ${deadline}`,
    );
  }
  const closed = (view.rateLimits ?? []).filter((k) => k.closed);
  if (closed.length > 0) {
    lines.push(`rate limits closed: ${plural(closed.length, "key")}`);
    for (const k of closed) {
      lines.push(
        `  ${cell(k.key, 60)}  opens ${iso(new Date(k.openAt))} (${inSeconds(k.openAt - now)})  refused ${k.refused}`,
      );
    }
  }
  lines.push("");
  lines.push(describeActor(view.tree));
  renderChildren(view.tree.children, "", lines);
  const c = view.tree.coordinator;
  if (c) lines.push(`coordinator: ${pairs(c)}`);
  return lines.join("\n");
}

function renderChildren(children: readonly ActorJson[], indent: string, lines: string[]): void {
  const idle = children.filter(isIdleSlot);
  const shown: (ActorJson | string)[] = children.filter((c) => !isIdleSlot(c));
  if (idle.length > 0) {
    const names = idle.slice(0, 8).map((c) => c.id);
    shown.push(`${plural(idle.length, "idle slot")}: ${names.join(", ")}${idle.length > 8 ? ", ..." : ""}`);
  }
  shown.forEach((child, i) => {
    const last = i === shown.length - 1;
    const branch = `${indent}${last ? "└─ " : "├─ "}`;
    if (typeof child === "string") {
      lines.push(`${branch}${child}`);
      return;
    }
    lines.push(`${branch}${describeActor(child)}`);
    renderChildren(child.children, `${indent}${last ? "   " : "│  "}`, lines);
  });
}

function isIdleSlot(a: ActorJson): boolean {
  return (
    a.machine === "jobTask" && (a.context.job === null || a.context.job === undefined) && a.state === "idle"
  );
}

function describeActor(a: ActorJson): string {
  const state = typeof a.state === "string" ? a.state : JSON.stringify(a.state);
  const status = a.status === "active" ? "" : ` [${a.status}]`;
  const extra: Record<string, unknown> = { ...a.context };
  if (a.buffered !== undefined) extra.buffered = a.buffered;
  if (a.pendingOutcomes !== undefined) extra.pendingOutcomes = a.pendingOutcomes;
  const ctx = pairs(extra);
  return `${a.id} (${a.machine}) ${state}${status}${ctx ? `  ${ctx}` : ""}`;
}

const timeKeys = new Set(["deadline", "runningSince", "openedAt", "lastWorkAt", "startedAt"]);

/** `key=value` pairs of the non-empty context fields, times as ISO 8601. */
function pairs(o: Record<string, unknown>): string {
  return Object.entries(o)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => {
      if (typeof v === "number" && timeKeys.has(k) && v > 1e12) return `${k}=${iso(new Date(v))}`;
      if (Array.isArray(v)) return `${k}=[${v.length}]`;
      return `${k}=${cell(v, 60)}`;
    })
    .join(" ");
}

function inSeconds(ms: number): string {
  const s = (Math.abs(ms) / 1000).toFixed(1);
  return ms >= 0 ? `in ${s} s` : `${s} s ago`;
}

/** One streamed event as a line for people. */
export function renderEvent(e: Record<string, unknown>): string {
  const at = typeof e.at === "number" ? new Date(e.at).toISOString().slice(11, 23) : "--:--:--.---";
  const kind = String(e.type ?? "").replace(/^@xstate\./, "");
  const actor = String(e.actor ?? "-");
  let what = "";
  const event = e.event as { type?: unknown } | undefined;
  if (kind === "event") what = `${String(event?.type)}${e.source ? ` <- ${String(e.source)}` : ""}`;
  else if (kind === "snapshot" || kind === "microstep") {
    const s = e.snapshot as { value?: unknown; status?: unknown; context?: unknown } | undefined;
    // Actors without states (fromTransition logic, like the polling strategy) show their context.
    const state = s?.value === undefined || s.value === null ? cell(s?.context, 60) : cell(s.value, 60);
    what = `${state}${s?.status && s.status !== "active" ? ` [${String(s.status)}]` : ""} after ${String(event?.type)}`;
  } else if (kind === "action") what = String((e.action as { type?: unknown } | undefined)?.type);
  else if (kind === "actor") what = "registered";
  return `${at}  ${actor.padEnd(14)} ${kind.padEnd(9)} ${what}`;
}

/** Parses Server-Sent Events from a byte stream; calls `onEvent` for each complete event. */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: { event: string; data: string }) => boolean | void,
): Promise<void> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = value;
          else if (field === "data") data.push(value);
        }
        if (data.length > 0 && onEvent({ event, data: data.join("\n") }) === false) return;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

async function request(
  url: URL,
  token: string | undefined,
  accept: string,
  signal?: AbortSignal,
): Promise<Response> {
  const headers: Record<string, string> = { Accept: accept };
  if (token) headers.Authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, ...(signal ? { signal } : {}) });
  } catch (error) {
    const cause = (error as { cause?: { message?: string; code?: string } }).cause;
    throw new Error(`cannot reach ${url.origin}: ${cause?.code ?? cause?.message ?? String(error)}`);
  }
  if (res.status === 401) {
    throw new Error(
      `${url.origin} refused the request (401): pass the inspector's --token (or set PAWL_INSPECT_TOKEN)`,
    );
  }
  if (!res.ok) {
    const text = await res.text().catch(() => "");
    let why = text.trim();
    try {
      why = String((JSON.parse(text) as { error?: unknown }).error ?? why);
    } catch {
      // not JSON: keep the text
    }
    throw new Error(`${url.href} answered ${res.status}${why ? `: ${cell(why, 200)}` : ""}`);
  }
  return res;
}

async function follow(
  ctx: CommandContext,
  args: ParsedArgs,
  stream: URL,
  token: string | undefined,
): Promise<void> {
  const asJson = flagOpt(args, "json");
  const actor = stringOpt(args, "actor");
  const types = stringOpt(args, "types");
  const countRaw = stringOpt(args, "count");
  const count =
    countRaw === undefined ? Infinity : intValue("count", countRaw, { min: 1, max: 1_000_000_000 });
  if (actor) stream.searchParams.set("actor", actor);
  if (types) stream.searchParams.set("types", types);
  const abort = new AbortController();
  const res = await request(stream, token, "text/event-stream", abort.signal);
  if (!res.body) throw new Error(`${stream.href} sent no body`);
  let seen = 0;
  try {
    await readSse(res.body, ({ event, data }) => {
      if (event === "hello") return true;
      if (event === "dropped") {
        ctx.err(`pawl: the node dropped events (this client fell behind): ${data}`);
        return true;
      }
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(data) as Record<string, unknown>;
      } catch {
        return true;
      }
      ctx.out(asJson ? JSON.stringify(parsed) : renderEvent(parsed));
      return ++seen < count;
    });
  } finally {
    abort.abort();
  }
  if (seen < count) ctx.err("pawl: the stream ended (the node stopped or closed the connection)");
}

/** `pawl inspect <url> [--token t] [--follow] [--actor prefix] [--types k] [--count n] [--json]`. */
export const inspectCommand: Command = {
  words: ["inspect"],
  summary: "show a running node's actors (its opt-in /debug/actors endpoint)",
  usage: "inspect <url> [--token t] [--follow] [--actor prefix] [--types k[,k]] [--count n] [--json]",
  details:
    "Reads the actor tree of a running node from its inspector (createInspector in pawl/observability)\n" +
    "and prints it: busy slots with their job, step and watchdog deadline, then every actor with its state\n" +
    "and key context. <url> is the node's address (http://host:port, /debug/actors is assumed) or the\n" +
    "endpoint's full URL. With --follow, xstate inspection events are then streamed until the node stops\n" +
    "(or --count events arrived); --actor keeps actors whose id starts with a prefix (comma-separated).\n" +
    "The token may also come from $PAWL_INSPECT_TOKEN. --json prints JSON (with --follow: one per line).",
  options: {
    token: {
      type: "string",
      value: "t",
      description: "the inspector's bearer token (default: $PAWL_INSPECT_TOKEN)",
    },
    follow: { type: "boolean", short: "f", description: "then stream inspection events" },
    actor: {
      type: "string",
      value: "prefix",
      description: "with --follow: only actors whose id starts with this",
    },
    types: {
      type: "string",
      value: "k[,k]",
      description: "with --follow: event kinds (actor, event, snapshot, action, microstep)",
    },
    count: { type: "string", value: "n", description: "with --follow: stop after n events" },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1, names: "<url>" },
  async run(ctx, args) {
    const { tree, stream } = inspectorUrls(args.positionals[0] as string);
    const token = stringOpt(args, "token") ?? (process.env.PAWL_INSPECT_TOKEN || undefined);
    const asJson = flagOpt(args, "json");
    const followed = flagOpt(args, "follow");
    if (!followed) {
      for (const o of ["actor", "types", "count"]) {
        if (stringOpt(args, o) !== undefined) throw new UsageError(`--${o} goes with --follow`);
      }
    }
    const view = (await (await request(tree, token, "application/json")).json()) as ActorsJson;
    if (asJson) ctx.out(followed ? JSON.stringify(view) : json(view));
    else ctx.out(renderActors(view));
    if (followed) await follow(ctx, args, stream, token);
    return 0;
  },
};

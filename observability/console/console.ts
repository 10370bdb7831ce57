/**
 * The operators' console: server-rendered pages under one path prefix (default `/console`), served by the
 * same handler chain as `/metrics` and `/debug/actors`, with no process, asset server or network access
 * of its own. Pages read through the client's API (getJob, listJobs, explain, dlq, listPaused, cluster);
 * nothing here writes SQL.
 *
 * Safety (docs/trust-boundaries.md): read-only unless `actions: true`, and actions need a `token`
 * (InsecureSurfaceError otherwise). With a token, every request needs it: an `Authorization: Bearer`
 * header, or the HttpOnly SameSite=Strict session cookie that the sign-in form (`POST <base>/login`)
 * sets; the token is never read from, or written into, a URL or a page. Without a token the console
 * answers only on loopback, and a `Host` outside the allowlist gets 421 whatever the token (access.ts),
 * which defeats DNS rebinding. Actions are POSTs whose `Origin` (else `Sec-Fetch-Site: same-origin`)
 * must name the allowed `Host`, carrying the console's anti-forgery value, so another site cannot make
 * an operator's browser retry or purge anything. Responses carry a strict Content-Security-Policy
 * (one nonce for the inline stylesheet and the actors page's script) and refuse framing. Every request
 * goes through the shared guard (http-guard.ts): a fault is a status code and a log line, and a 500 says
 * nothing of the database's error.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Pawl } from "../../src/index.js";
import { flowFromRow } from "../../src/composition/flows.js";
import { maxFlowGraphMembers } from "../../src/store/operator/flow-page-sql.js";
import { InsecureSurfaceError, refusal, sessionCookie, tokenCheck } from "../access.js";
import {
  BadRequestError,
  guardHandler,
  requestUrl,
  surfaceLogger,
  type RequestHandler,
  type SurfaceLogger,
} from "../http-guard.js";
import { flowPage, flowsPage } from "./flow-pages.js";
import { layout, type Html, type PageContext } from "./html.js";
import { overviewPage } from "./overview-page.js";
import { loginPage } from "./login-page.js";
import {
  actorsPage,
  breakersPage,
  dlqPage,
  jobPage,
  jobsPage,
  nodesPage,
  pausedPage,
  type JobFilters,
} from "./pages.js";
import { schedulesPage } from "./schedules-page.js";

/** Options of {@link createConsole}. */
export interface ConsoleOptions {
  /** The path prefix. Default `/console`. */
  basePath?: string;
  /**
   * A token every request must carry (pass the inspector's): a Bearer header, or the cookie the sign-in
   * form sets. Without one the console answers only connections that arrived on loopback.
   */
  token?: string;
  /** Show and accept actions (retry, cancel, pause, resume, purge); needs `token`. Default false: read-only. */
  actions?: boolean;
  /** Host names (besides the bound address, `localhost`, `127.0.0.1` and `[::1]`) a request's `Host` may name. */
  allowedHosts?: string[];
  /** Where failures answered with a 500 are logged; `false` for nowhere. Default: stderr, warnings and up. */
  logger?: SurfaceLogger;
  /** Where the inspector is mounted, for the actors page's live events; null: no live events. Default `/debug/actors`. */
  inspectorPath?: string | null;
  /** Jobs per page of the job list. Default 50. */
  pageSize?: number;
}

/** What {@link createConsole} returns. */
export interface Console {
  /** Serves `<basePath>` and below; other paths go to `next` (404 without one). */
  readonly handler: RequestHandler;
  /** The path prefix. */
  readonly basePath: string;
  /** Whether requests need a token (else the console answers only on loopback). */
  readonly tokenRequired: boolean;
}

/** What the console reads and does: a {@link Pawl} (a node, or one built only to serve the console). */
export type ConsoleNode = Pick<
  Pawl,
  | "nodeId"
  | "getJob"
  | "listJobs"
  | "explain"
  | "dlq"
  | "listPaused"
  | "cluster"
  | "inspect"
  | "getFlow"
  | "cancel"
  | "pauseJob"
  | "resumeJob"
  | "pauseQueue"
  | "resumeQueue"
  | "pauseJobType"
  | "resumeJobType"
  | "store"
>;

const maxBody = 64 * 1024;

/**
 * Creates the console of a pawl instance.
 *
 * @example
 * ```ts
 * const inspector = createInspector(pawl, { token });
 * const ui = createConsole(pawl, { token, actions: process.env.PAWL_CONSOLE_ACTIONS === "1" });
 * await serveMetrics(metrics, { port: 9464, inspector, console: ui }); // http://127.0.0.1:9464/console
 * ```
 */
export function createConsole(pawl: ConsoleNode, options: ConsoleOptions = {}): Console {
  const base = (options.basePath ?? "/console").replace(/\/+$/, "");
  if (!base.startsWith("/")) throw new TypeError("createConsole: basePath must start with /");
  const tokens = tokenCheck("createConsole", options.token);
  const actions = options.actions ?? false;
  if (actions && !tokens.required)
    throw new InsecureSurfaceError("createConsole: actions need a token; pass { token, actions: true }");
  const allowedHosts = options.allowedHosts ?? [];
  const pageSize = options.pageSize ?? 50;
  const inspectorPath = options.inspectorPath === undefined ? "/debug/actors" : options.inspectorPath;
  // The anti-forgery value: derived from a secret of this console, never from the request.
  const csrf = createHmac("sha256", randomBytes(32)).update("pawl-console-csrf").digest("base64url");

  const handler = guardHandler(
    "console",
    (req, res, next) => {
      const url = requestUrl(req);
      const path = url.pathname.replace(/\/+$/, "");
      if (path !== base && !path.startsWith(`${base}/`)) {
        if (next) next();
        else send(res, 404, "text/plain", "not found\n");
        return;
      }
      const refused = refusal(req, tokens, allowedHosts);
      if (refused !== null) return send(res, refused.status, "text/plain", `${refused.message}\n`);
      const route = path.slice(base.length) || "/";
      if (route === "/login" && tokens.required) return login(req, res);
      if (!tokens.accepts(req)) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="pawl console"');
        return signIn(res, 401, false);
      }
      const ctx = (title: string): PageContext => ({
        base,
        title,
        nodeId: pawl.nodeId,
        actions,
        csrf,
        nonce: randomBytes(12).toString("base64"),
      });
      if (req.method === "POST") return post(req, res, route);
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.setHeader("Allow", "GET, HEAD, POST");
        return send(res, 405, "text/plain", "method not allowed\n");
      }
      return get(res, route, url, ctx);
    },
    surfaceLogger(options.logger),
  );

  /** The sign-in page, with the policy every page carries. */
  const signIn = (res: ServerResponse, status: number, failed: boolean) => {
    const nonce = randomBytes(12).toString("base64");
    res.setHeader(
      "Content-Security-Policy",
      `default-src 'none'; style-src 'nonce-${nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    send(res, status, "text/html; charset=utf-8", loginPage(base, nonce, failed));
  };

  /** `GET <base>/login`: the form; `POST`: checks the token and sets the session cookie. */
  async function login(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== "POST") return signIn(res, 200, false);
    if (!sameOrigin(req)) return send(res, 403, "text/plain", "cross-site request refused\n");
    const form = await readForm(req);
    if (!tokens.matches(form.get("token") ?? "")) return signIn(res, 401, true);
    const secure = (req.socket as { encrypted?: boolean } | null)?.encrypted === true ? "; Secure" : "";
    // Path=/ so the inspector's stream, mounted beside the console, sees the same session.
    res.setHeader(
      "Set-Cookie",
      `${sessionCookie}=${tokens.cookieValue}; Path=/; HttpOnly; SameSite=Strict${secure}`,
    );
    res.writeHead(303, { Location: `${base}/`, "Cache-Control": "no-store" });
    res.end();
  }

  const page = (res: ServerResponse, c: PageContext, active: string, body: Html) => {
    res.setHeader(
      "Content-Security-Policy",
      `default-src 'none'; style-src 'nonce-${c.nonce}'; script-src 'nonce-${c.nonce}'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    send(res, 200, "text/html; charset=utf-8", layout(c, active, body));
  };

  async function get(res: ServerResponse, route: string, url: URL, ctx: (t: string) => PageContext) {
    const q = (k: string) => url.searchParams.get(k)?.trim() || undefined;
    const now = new Date();
    if (route === "/") {
      const [overview, cluster, keys] = await Promise.all([
        pawl.store.operator.overview({ maxGroups: 50 }),
        pawl.cluster(),
        pawl.store.operator.concurrencyKeys({ top: 10 }),
      ]);
      return page(res, ctx("Overview"), "", overviewPage(ctx("Overview"), overview, cluster.nodes, keys));
    }
    if (route === "/flows") {
      const kind = q("kind");
      const known = kind === "chain" || kind === "batch" || kind === "workflow" ? kind : undefined;
      const rows = await pawl.store.operator.flows({
        ...(known ? { kind: known } : {}),
        ...(q("before") ? { beforeId: q("before") } : {}),
        limit: pageSize,
      });
      const c = ctx("Flows");
      return page(res, c, "/flows", flowsPage(c, rows, known, pageSize, now));
    }
    const flowMatch = /^\/flows\/(\d{1,19})$/.exec(route);
    if (flowMatch) {
      const id = flowMatch[1] as string;
      const row = await pawl.store.operator.flow(id);
      if (!row) return send(res, 404, "text/plain", `no flow ${id}\n`);
      // A chain's or workflow's graph needs its members at once (up to the cap); a batch's are paged.
      const cap = row.kind === "batch" ? pageSize : maxFlowGraphMembers;
      const after = row.kind === "batch" ? q("after") : undefined;
      const members = await pawl.store.operator.flowGraph(id, cap, after);
      const c = ctx(`Flow ${id}`);
      return page(res, c, "/flows", flowPage(c, flowFromRow(row), members, cap, now));
    }
    if (route === "/schedules") {
      const after = q("after");
      const rows = await pawl.store.operator.schedules({
        ...(after ? { afterName: after } : {}),
        limit: pageSize,
      });
      const c = ctx("Schedules");
      return page(res, c, "/schedules", schedulesPage(c, rows, pageSize, now));
    }
    if (route === "/jobs") {
      const f: JobFilters = {
        status: q("status"),
        type: q("type"),
        queue: q("queue"),
        text: q("text"),
        before: q("before"),
      };
      const filter = {
        ...(f.status ? { status: f.status as never } : {}),
        ...(f.type ? { type: f.type } : {}),
        ...(f.queue ? { queue: f.queue } : {}),
        ...(f.before ? { beforeId: f.before } : {}),
        limit: pageSize,
      };
      const c = ctx("Jobs");
      if (f.text) {
        const found = await pawl.store.operator.searchJobs({ ...filter, text: f.text });
        return page(res, c, "/jobs", jobsPage(c, found.jobs, f, pageSize, now, found));
      }
      const jobs = await pawl.store.operator.jobPreviews(filter);
      return page(res, c, "/jobs", jobsPage(c, jobs, f, pageSize, now));
    }
    const jobMatch = /^\/jobs\/(\d{1,19})$/.exec(route);
    if (jobMatch) {
      const id = jobMatch[1] as string;
      const job = await pawl.getJob(id);
      if (!job) return send(res, 404, "text/plain", `no job ${id}\n`);
      const [explanation, flow] = await Promise.all([
        pawl.explain(id),
        job.flowId ? pawl.getFlow(job.flowId, 200) : Promise.resolve(null),
      ]);
      const c = ctx(`Job ${id}`);
      return page(res, c, "/jobs", jobPage(c, job, explanation, flow?.members ?? null, now));
    }
    if (route === "/dlq") {
      const type = q("type");
      const jobs = await pawl.store.operator.deadPreviews({ ...(type ? { type } : {}), limit: 200 });
      const c = ctx("Dead letter queue");
      return page(res, c, "/dlq", dlqPage(c, jobs, type, now));
    }
    if (route === "/paused") {
      const [pauses, paused] = await Promise.all([
        pawl.listPaused(),
        pawl.store.operator.jobPreviews({ status: "PAUSED", limit: 200 }),
      ]);
      const c = ctx("Paused");
      return page(
        res,
        c,
        "/paused",
        pausedPage(
          c,
          pauses,
          paused.filter((j) => j.pausedBy === "job"),
          now,
        ),
      );
    }
    if (route === "/nodes") {
      const cluster = await pawl.cluster();
      const c = ctx("Nodes and leases");
      return page(res, c, "/nodes", nodesPage(c, cluster.nodes, cluster.leases, now));
    }
    if (route === "/breakers") {
      const [cluster, permits] = await Promise.all([pawl.cluster(), pawl.store.operator.permits()]);
      const c = ctx("Breakers and permits");
      return page(res, c, "/breakers", breakersPage(c, cluster.nodes, permits, now));
    }
    if (route === "/actors") {
      const c = ctx("Actors");
      return page(
        res,
        c,
        "/actors",
        actorsPage(
          c,
          pawl.inspect(),
          // The stream authenticates with the session cookie: the token is never put in a URL.
          inspectorPath === null ? null : `${inspectorPath}/stream`,
        ),
      );
    }
    send(res, 404, "text/plain", "not found\n");
  }

  async function post(req: IncomingMessage, res: ServerResponse, route: string) {
    if (!actions) return send(res, 403, "text/plain", "actions are off: this console is read-only\n");
    if (!sameOrigin(req)) return send(res, 403, "text/plain", "cross-site request refused\n");
    const form = await readForm(req);
    const given = form.get("csrf") ?? "";
    if (!timingSafeEqual(sha(given), sha(csrf)))
      return send(res, 403, "text/plain", "missing or wrong anti-forgery value\n");
    const back = await act(route, form);
    if (back === null) return send(res, 404, "text/plain", "no such action\n");
    res.writeHead(303, { Location: `${base}${back}`, "Cache-Control": "no-store" });
    res.end();
  }

  /** Runs one action; returns the page to go back to, or null for an unknown action. */
  async function act(route: string, form: URLSearchParams): Promise<string | null> {
    const m = /^\/jobs\/(\d{1,19})\/(retry|cancel|pause|resume)$/.exec(route);
    if (m) {
      const [, id, verb] = m as unknown as [string, string, string];
      if (verb === "retry") await pawl.dlq.retry(id);
      else if (verb === "cancel") await pawl.cancel(id, "canceled from the console");
      else if (verb === "pause") await pawl.pauseJob(id);
      else await pawl.resumeJob(id);
      return `/jobs/${id}`;
    }
    if (route === "/dlq/retry") {
      const ids = form.getAll("ids").filter((x) => /^\d{1,19}$/.test(x));
      if (ids.length > 0) await pawl.dlq.retry(ids);
      return "/dlq";
    }
    if (route === "/dlq/purge") {
      const type = form.get("type") || undefined;
      await pawl.dlq.purge(type ? { type } : {});
      return "/dlq";
    }
    if (route === "/paused/pause" || route === "/paused/resume") {
      const kind = form.get("kind");
      const name = form.get("name") ?? "";
      const pause = route === "/paused/pause";
      if (kind === "queue") await (pause ? pawl.pauseQueue(name) : pawl.resumeQueue(name));
      else if (kind === "type") await (pause ? pawl.pauseJobType(name) : pawl.resumeJobType(name));
      else return null;
      return "/paused";
    }
    return null;
  }

  return { handler, basePath: base, tokenRequired: tokens.required };
}

/**
 * Whether a POST comes from the page's own origin (a browser always sends Origin on a cross-site POST).
 * Comparing Origin with Host is enough because Host was checked against the allowlist first: a
 * DNS-rebinding page, whose Origin and Host agree, names a host the allowlist refuses.
 */
function sameOrigin(req: IncomingMessage): boolean {
  const host = req.headers.host;
  const origin = req.headers.origin;
  if (typeof origin === "string") {
    try {
      return host !== undefined && new URL(origin).host === host;
    } catch {
      return false;
    }
  }
  return req.headers["sec-fetch-site"] === "same-origin";
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = String(req.headers["content-type"] ?? "");
  if (!type.startsWith("application/x-www-form-urlencoded")) return new URLSearchParams();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBody) throw new BadRequestError("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function sha(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    "Content-Type": type.includes("charset") ? type : `${type}; charset=utf-8`,
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * The console's pages, each a function from what was read to HTML (the reads are in console.ts). Every
 * action is a form that only {@link actionForm} renders, and only when actions are on.
 */
import { type Explanation, type Job, type NodeStatus } from "../../src/index.js";
import { describeReason } from "../../src/logic/explain-text.js";
import type { ActorNode, ActorTree } from "../../src/index.js";
import type { JobPreview } from "../../src/store/operator/job-preview-sql.js";
import { jobHistory } from "./job-history.js";
import { actionForm, h, jsonBlock, raw, table, when, type Html, type PageContext } from "./html.js";

const status = (s: string) => h`<span class="status s-${s}">${s}</span>`;
const jobLink = (ctx: PageContext, id: string) => h`<a href="${ctx.base}/jobs/${id}">${id}</a>`;

/** Filters of the job list. */
export interface JobFilters {
  status?: string;
  type?: string;
  queue?: string;
  /** Text in the payload (a bounded search: see {@link JobSearchWindow}). */
  text?: string;
  before?: string;
}

/** What a text search read: how many rows its window held, and the id the next page goes on below. */
export interface JobSearchWindow {
  scanned: number;
  next: string | null;
}

/** The job list, newest first, with keyset paging (`before` = the last id shown). */
export function jobsPage(
  ctx: PageContext,
  jobs: JobPreview[],
  f: JobFilters,
  pageSize: number,
  now: Date,
  search?: JobSearchWindow,
): Html {
  const statuses = ["", "WAITING", "PAUSED", "PENDING", "RUNNING", "SUCCEEDED", "CANCELED", "DEAD"];
  const nextBefore = search ? search.next : jobs.length === pageSize ? (jobs.at(-1)?.id ?? null) : null;
  const next = new URLSearchParams();
  for (const k of ["status", "type", "queue", "text"] as const) if (f[k]) next.set(k, f[k] as string);
  if (nextBefore !== null) next.set("before", nextBefore);
  const searched = search
    ? h`<p class="note">Searched the payloads of ${search.scanned} jobs${nextBefore === null ? "" : h`, down to id ${nextBefore}`}: ${jobs.length} found.</p>`
    : "";
  return h`<form class="filters" method="get" action="${ctx.base}/jobs">
<select name="status" aria-label="status">${statuses.map((s) => h`<option value="${s}" ${raw(s === (f.status ?? "") ? "selected" : "")}>${s || "any status"}</option>`)}</select>
<input name="type" placeholder="type" value="${f.type ?? ""}" aria-label="type"><input name="queue" placeholder="queue" value="${f.queue ?? ""}" aria-label="queue"><input name="text" placeholder="text in payload" value="${f.text ?? ""}" aria-label="text in payload" maxlength="200">
<button type="submit">Filter</button></form>${searched}${table(
    ["id", "type", "queue", "status", "attempts", "scheduled", "last error", "payload"],
    jobs.map((j) => [
      jobLink(ctx, j.id),
      j.type,
      j.queue,
      status(j.status),
      `${j.attempts}/${j.maxAttempts}`,
      when(j.scheduledTime, now),
      j.lastError ?? "",
      // A preview cut in SQL (job-preview-sql.ts): the whole payload is on the job's own page.
      h`<code class="preview">${j.payloadPreview}</code>`,
    ]),
    "no jobs match",
  )}${nextBefore !== null ? h`<p><a rel="next" href="${ctx.base}/jobs?${next.toString()}">Older jobs →</a></p>` : ""}`;
}

/** One job: the explain answer first, then its fields, payload, result, steps, machine, errors and flow. */
export function jobPage(
  ctx: PageContext,
  job: Job,
  explanation: Explanation,
  flowMembers: Job[] | null,
  now: Date,
): Html {
  const acts: Html[] = [];
  if (job.status === "DEAD") acts.push(actionForm(ctx, `/jobs/${job.id}/retry`, "Retry"));
  if (["PENDING", "RUNNING", "WAITING", "PAUSED"].includes(job.status))
    acts.push(actionForm(ctx, `/jobs/${job.id}/cancel`, "Cancel", {}, true));
  if (job.status === "PENDING") acts.push(actionForm(ctx, `/jobs/${job.id}/pause`, "Pause"));
  if (job.status === "PAUSED" && job.pausedBy === "job")
    acts.push(actionForm(ctx, `/jobs/${job.id}/resume`, "Resume"));
  return h`<p>${status(job.status)} · type <b>${job.type}</b> · queue <b>${job.queue}</b> ${acts}</p>
<section id="explain"><h2>Why?</h2><p class="verdict" data-verdict="${explanation.verdict}">${verdictText(explanation)}</p>
<ul class="reasons">${explanation.reasons.map((r) => h`<li data-kind="${r.kind}">${describeReason(r, explanation.at)}</li>`)}</ul></section>
<h2>Fields</h2>${table(
    ["field", "value"],
    [
      ["attempts", `${job.attempts} of ${job.maxAttempts}`],
      ["priority", job.priority],
      ["scheduled", when(job.scheduledTime, now)],
      ["picked by", job.pickedBy ?? ""],
      ["picked at", when(job.pickedAt, now)],
      ["created", when(job.createdAt, now)],
      ["finished", when(job.finishedAt, now)],
      ["unique key", job.uniqueKey ?? ""],
      ["cancel reason", job.cancelReason ?? ""],
      ["timeout", job.timeoutMs === null ? "type default" : `${job.timeoutMs} ms`],
      // The handler's latest ctx.progress(value): a percentage, or its JSON.
      [
        "progress",
        job.progress === null || job.progress === undefined
          ? ""
          : typeof job.progress === "number"
            ? `${job.progress}%`
            : JSON.stringify(job.progress),
      ],
    ],
  )}<h2>Payload</h2>${jsonBlock(job.payload)}<h2>Result</h2>${jsonBlock(job.result ?? null)}
${jobHistory(job, now)}<h2>Attempts with errors</h2>${table(
    ["attempt", "at", "error", "message"],
    job.errors.map((e) => [e.attempt, e.at, e.name, h`<span class="error-message">${e.message}</span>`]),
    "no failed attempt",
  )}${
    flowMembers
      ? h`<h2 id="flow">Flow <a href="${ctx.base}/flows/${job.flowId ?? ""}">${job.flowId}</a></h2>
<p><a href="${ctx.base}/flows/${job.flowId ?? ""}">The flow's page, with its dependency graph →</a></p>${table(
          ["id", "step", "type", "status"],
          flowMembers.map((m) => [
            jobLink(ctx, m.id),
            m.flowStep ?? "(completion)",
            m.type,
            status(m.status),
          ]),
        )}`
      : ""
  }`;
}

function verdictText(e: Explanation): string {
  switch (e.verdict) {
    case "runnable":
      return "Runnable: nothing holds it; the next poll of a node that runs its type should claim it.";
    case "blocked":
      return "Not running, because:";
    case "running":
      return "Running:";
    case "orphaned":
      return "Held by a dead node:";
    case "finished":
      return "Finished:";
  }
}

/** The dead letter queue, with retry per job and purge. */
export function dlqPage(ctx: PageContext, jobs: JobPreview[], type: string | undefined, now: Date): Html {
  return h`<form class="filters" method="get" action="${ctx.base}/dlq"><input name="type" placeholder="type" value="${type ?? ""}" aria-label="type"><button type="submit">Filter</button></form>
${jobs.length > 0 ? h`<p>${actionForm(ctx, "/dlq/retry", `Retry all ${jobs.length} shown`, { ids: jobs.map((j) => j.id) })} ${actionForm(ctx, "/dlq/purge", type ? `Purge every DEAD ${type}` : "Purge every DEAD job", type ? { type } : {}, true)}</p>` : ""}
${table(
  ["id", "type", "died", "attempts", "last error", ""],
  jobs.map((j) => [
    jobLink(ctx, j.id),
    j.type,
    when(j.finishedAt, now),
    j.attempts,
    j.lastError ?? "",
    actionForm(ctx, `/jobs/${j.id}/retry`, "Retry"),
  ]),
  "the dead letter queue is empty",
)}`;
}

/** Paused queues and types, with resume, and a form to pause one. */
export function pausedPage(
  ctx: PageContext,
  pauses: { kind: string; name: string; pausedAt: Date; pausedBy: string | null; jobs: number }[],
  pausedJobs: JobPreview[],
  now: Date,
): Html {
  const pauseForm = ctx.actions
    ? h`<h2>Pause</h2><form method="post" action="${ctx.base}/paused/pause" class="filters"><input type="hidden" name="csrf" value="${ctx.csrf}">
<select name="kind" aria-label="kind"><option value="queue">queue</option><option value="type">type</option></select><input name="name" placeholder="name" aria-label="name" required><button type="submit" data-action="pause">Pause</button></form>`
    : "";
  return h`${table(
    ["kind", "name", "since", "by", "jobs held", ""],
    pauses.map((p) => [
      p.kind,
      p.name,
      when(p.pausedAt, now),
      p.pausedBy ?? "",
      p.jobs,
      actionForm(ctx, "/paused/resume", "Resume", { kind: p.kind, name: p.name }),
    ]),
    "no queue or type is paused",
  )}<h2>Jobs paused one by one</h2>${table(
    ["id", "type", "queue", ""],
    pausedJobs.map((j) => [
      jobLink(ctx, j.id),
      j.type,
      j.queue,
      actionForm(ctx, `/jobs/${j.id}/resume`, "Resume"),
    ]),
    "none",
  )}${pauseForm}`;
}

/** Leases as `pawl.cluster()` reports them. */
export interface LeaseView {
  name: string;
  owner: string;
  expiresAt: Date;
  held: boolean;
}

/** Node rows and leases. */
export function nodesPage(ctx: PageContext, nodes: NodeStatus[], leases: LeaseView[], now: Date): Html {
  return h`${table(
    [
      "node",
      "alive",
      "heartbeat",
      "started",
      "host / pid",
      "release",
      "concurrency",
      "busy",
      "types",
      "queues",
    ],
    nodes.map((n) => {
      const r = n.info.registry;
      return [
        n.nodeId,
        n.alive ? "alive" : h`<b class="s-DEAD">dead</b>`,
        when(n.heartbeatAt, now),
        when(n.startedAt, now),
        `${n.info.host} / ${n.info.pid}`,
        // The package version and the schema version its release needs: which releases run side by side.
        typeof n.info.schemaVersion === "number"
          ? `${n.info.version} (schema ${n.info.schemaVersion})`
          : n.info.version,
        n.info.concurrency,
        r ? r.busy : "",
        r ? r.types.map((t) => t.type).join(", ") : h`<span class="muted">not published</span>`,
        r?.queues ? r.queues.map((q) => `${q.name} ${q.running}/${q.limit}`).join(", ") : "all",
      ];
    }),
    "no node rows",
  )}<h2>Leases</h2>${table(
    ["lease", "owner", "expires", "held"],
    leases.map((l) => [l.name, l.owner, when(l.expiresAt, now), l.held ? "yes" : "expired"]),
    "no lease is held",
  )}`;
}

/** Breakers per node and service, and permits per resource. */
export function breakersPage(
  ctx: PageContext,
  nodes: NodeStatus[],
  permits: Record<string, { held: number; holders: { jobId: string; nodeId: string }[] }>,
  now: Date,
): Html {
  const breakerRows = nodes.flatMap((n) =>
    (n.info.registry?.breakers ?? []).map((b) => [
      n.nodeId,
      b.service,
      h`<span class="status ${b.state === "OPEN" ? "s-DEAD" : ""}">${b.state}</span>`,
      b.openUntil === null ? "" : when(new Date(b.openUntil), now),
    ]),
  );
  const capacities = new Map<string, number>();
  for (const n of nodes)
    for (const [r, c] of Object.entries(n.info.registry?.resources ?? {})) capacities.set(r, c);
  for (const r of Object.keys(permits)) if (!capacities.has(r)) capacities.set(r, Number.POSITIVE_INFINITY);
  return h`<h2>Breakers (as of each node's last heartbeat)</h2>${table(["node", "service", "state", "probes again"], breakerRows, "no breaker has been used")}
<h2>Permits</h2>${table(
    ["resource", "held", "capacity", "holders"],
    [...capacities].map(([r, cap]) => {
      const p = permits[r] ?? { held: 0, holders: [] };
      return [
        r,
        p.held,
        Number.isFinite(cap) ? cap : "unlimited",
        p.holders.map((x) => [jobLink(ctx, x.jobId), ` (${x.nodeId}) `]),
      ];
    }),
    "no resource is configured or held",
  )}`;
}

function treeItem(n: ActorNode): Html {
  return h`<li><b>${n.id}</b> <span class="muted">${n.machine}</span> ${JSON.stringify(n.state)} <code>${JSON.stringify(n.context)}</code>${
    n.children.length > 0 ? h`<ul>${n.children.map(treeItem)}</ul>` : ""
  }</li>`;
}

/** The live actor tree of this node, and the inspector's event stream (when an inspector is mounted). */
export function actorsPage(ctx: PageContext, tree: ActorTree | null, streamUrl: string | null): Html {
  if (!tree) return h`<p class="empty">This node is not running.</p>`;
  const live = streamUrl
    ? h`<h2>Live events</h2><pre id="events" data-stream="${streamUrl}"></pre><script nonce="${ctx.nonce}">${raw(streamScript)}</script>`
    : h`<p class="muted">Mount the inspector (createConsole's inspectorPath) to follow live events.</p>`;
  return h`<div class="tree"><ul>${treeItem(tree)}</ul></div>${live}`;
}

// The only script of the console: follows the inspector's Server-Sent Events and shows the last 200.
const streamScript = `(()=>{const box=document.getElementById("events");const es=new EventSource(box.dataset.stream);
const lines=[];const add=(t)=>{lines.push(t);if(lines.length>200)lines.shift();box.textContent=lines.join("\\n");box.scrollTop=box.scrollHeight;};
es.addEventListener("hello",()=>add("connected"));es.onmessage=(m)=>{try{const e=JSON.parse(m.data);
add(e.type.replace("@xstate.","")+" "+e.actor+(e.event?" "+e.event.type:"")+(e.snapshot?" -> "+JSON.stringify(e.snapshot.value):""));}catch{add(m.data);}};
es.onerror=()=>add("(stream closed)");})();`;

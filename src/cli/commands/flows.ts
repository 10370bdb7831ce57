/**
 * Composition from the command line (docs/composition.md): `pawl flows` and `pawl flow <id>` show chains,
 * batches (with progress) and workflows; `pawl signal` delivers a signal; `pawl pause` / `pawl resume`
 * pause and resume a job, a queue or a job type; `pawl paused` lists what is paused. WAITING and PAUSED
 * jobs also show in `pawl jobs --status WAITING,PAUSED`.
 */
import type { Flow, FlowDetail } from "../../composition/flows.js";
import type { Pause } from "../../composition/pause.js";
import type { FlowKind } from "../../store/composition/flow-sql.js";
import { flagOpt, idValue, intValue, jsonOption, jsonValue, stringOpt, UsageError } from "../args.js";
import type { Command } from "../command.js";
import { cell, iso, json, jobsTable, plural, table } from "../format.js";
import { limitOption, readLimit } from "./jobs.js";

const kinds: readonly FlowKind[] = ["chain", "batch", "workflow"];

/** `[#######-------------]  35%` for `done` of `total`. */
export function progressBar(done: number, total: number, width = 20): string {
  const ratio = total <= 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%`;
}

function counts(f: Flow): string {
  return `${f.succeeded} ok, ${f.dead} dead, ${f.canceled} canceled, ${f.remaining} left`;
}

/** The table of `pawl flows`. */
export function flowsTable(flows: readonly Flow[]): string {
  return table(
    ["ID", "KIND", "NAME", "STATE", "PROGRESS", "DONE/TOTAL", "COUNTS", "CREATED"],
    flows.map((f) => [
      f.id,
      f.kind,
      cell(f.name, 30),
      f.state,
      progressBar(f.total - f.remaining, f.total, 10),
      `${f.total - f.remaining}/${f.total}`,
      counts(f),
      iso(f.createdAt),
    ]),
  );
}

/** `pawl flow <id>`: the flow's fields, its progress, and its members. */
export function flowDetail(f: FlowDetail): string {
  const lines = [
    `flow ${f.id} (${f.kind}${f.name ? ` "${f.name}"` : ""})  ${f.state}`,
    `progress:        ${progressBar(f.total - f.remaining, f.total)}  ${f.total - f.remaining}/${f.total}`,
    `counts:          ${counts(f)}`,
    `failure policy:  ${f.failurePolicy === "stop" ? "stop (a failed member cancels its dependents)" : "continue"}`,
    `completion job:  ${f.completionJobId ?? "-"}`,
    `created:         ${iso(f.createdAt)}`,
    `completed:       ${f.completedAt ? iso(f.completedAt) : "-"}`,
  ];
  if (f.members.length > 0) {
    const shown = f.members.length < f.total ? ` (first ${f.members.length} of ${f.total})` : "";
    lines.push("", `members${shown}:`);
    lines.push(
      table(
        ["STEP", "ID", "TYPE", "STATUS", "ATTEMPTS", "LAST ERROR"],
        f.members.map((j) => [
          cell(j.flowStep, 30),
          j.id,
          cell(j.type, 30),
          j.status === "WAITING" && j.waitingFor ? `WAITING (${j.waitingFor})` : j.status,
          `${j.attempts}/${j.maxAttempts}`,
          cell(j.lastError ?? j.cancelReason, 50),
        ]),
      ),
    );
  }
  return lines.join("\n");
}

/** `pawl flows [--kind k] [--running|--completed] [--limit n] [--json]`. */
export const flowsCommand: Command = {
  words: ["flows"],
  summary: "list chains, batches and workflows with their progress",
  usage: "flows [--kind chain|batch|workflow] [--running | --completed] [--limit n] [--json]",
  details:
    "Lists flows, newest first, with their progress: members SUCCEEDED, DEAD, CANCELED and not finished,\n" +
    "from the counters the store keeps (no member is counted).",
  options: {
    kind: { type: "string", value: "k", description: "only flows of this kind: chain, batch or workflow" },
    running: { type: "boolean", description: "only flows with members not finished" },
    completed: { type: "boolean", description: "only flows whose members all finished" },
    ...limitOption,
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const kind = stringOpt(args, "kind");
    if (kind !== undefined && !(kinds as readonly string[]).includes(kind)) {
      throw new UsageError(`unknown kind ${JSON.stringify(kind)}; use ${kinds.join(", ")}`);
    }
    if (flagOpt(args, "running") && flagOpt(args, "completed")) {
      throw new UsageError("give --running or --completed, not both");
    }
    const state = flagOpt(args, "running") ? "running" : flagOpt(args, "completed") ? "completed" : undefined;
    const flows = await ctx.pawl().listFlows({
      ...(kind ? { kind: kind as FlowKind } : {}),
      ...(state ? { state } : {}),
      limit: readLimit(args),
    });
    if (flagOpt(args, "json")) ctx.out(json(flows));
    else if (flows.length === 0) ctx.out("no flows");
    else ctx.out(`${flowsTable(flows)}\n(${plural(flows.length, "flow")})`);
    return 0;
  },
};

/** `pawl flow <id> [--members n] [--json]`. */
export const flowCommand: Command = {
  words: ["flow"],
  summary: "show one flow: progress, counts and members",
  usage: "flow <id> [--members n] [--json]",
  details:
    "Shows a flow's progress and counters, and its first members (WAITING ones say what they wait for).",
  options: {
    members: { type: "string", value: "n", description: "members shown (0-10000, default 50)" },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1, names: "<id>" },
  async run(ctx, args) {
    const id = idValue("<id>", args.positionals[0] as string);
    const raw = stringOpt(args, "members");
    const members = raw === undefined ? 50 : intValue("members", raw, { min: 0, max: 10_000 });
    const flow = await ctx.pawl().getFlow(id, members);
    if (!flow) {
      ctx.err(`pawl: no flow with id ${id}`);
      return 1;
    }
    ctx.out(flagOpt(args, "json") ? json(flow) : flowDetail(flow));
    return 0;
  },
};

/** `pawl signal <id> [json]`. */
export const signalCommand: Command = {
  words: ["signal"],
  summary: "deliver a signal to a job waiting for one",
  usage: "signal <id> [json] [--json]",
  details:
    "Delivers <json> (default null) to a job parked by ctx.waitForSignal(): it becomes PENDING and its next\n" +
    "run receives the payload. Fails when the job is not waiting for a signal.",
  options: { ...jsonOption },
  positionals: { min: 1, max: 2, names: "<id> [json]" },
  async run(ctx, args) {
    const [rawId, raw] = args.positionals as [string, string | undefined];
    const id = idValue("<id>", rawId);
    const payload = raw === undefined ? null : jsonValue("the signal payload", raw);
    const result = await ctx.pawl().signal(id, payload);
    ctx.out(flagOpt(args, "json") ? json(result) : `signaled job ${id}: now ${result.status}`);
    return 0;
  },
};

const targets = ["job", "queue", "type"] as const;

function target(raw: string | undefined): (typeof targets)[number] {
  if (!(targets as readonly (string | undefined)[]).includes(raw)) {
    throw new UsageError(`pause what? use job <id>, queue <name> or type <name>, not ${JSON.stringify(raw)}`);
  }
  return raw as (typeof targets)[number];
}

function pauseCommand(resume: boolean): Command {
  const verb = resume ? "resume" : "pause";
  return {
    words: [verb],
    summary: resume
      ? "resume a paused job, queue or job type"
      : "pause a job, a queue or a job type, cluster-wide",
    usage: `${verb} job <id> | ${verb} queue <name> | ${verb} type <name> [--json]`,
    details: resume
      ? "Resumes a job paused with `pawl pause job`, or a paused queue or job type: their jobs are PENDING again\n" +
        "(unless another pause still holds them)."
      : "Pauses a PENDING job, or every job of a queue or job type on every node: they become PAUSED and no\n" +
        "node claims them until resumed. Jobs of a paused queue or type that become PENDING later are held too.",
    options: { ...jsonOption },
    positionals: { min: 2, max: 2, names: "job|queue|type <id|name>" },
    async run(ctx, args) {
      const [what, name] = args.positionals as [string, string];
      const kind = target(what);
      const id = kind === "job" ? idValue("<id>", name) : name;
      const pawl = ctx.pawl();
      if (kind === "job") {
        const job = resume ? await pawl.resumeJob(id) : await pawl.pauseJob(id);
        ctx.out(flagOpt(args, "json") ? json(job) : `${verb}d job ${job.id}: now ${job.status}`);
        return 0;
      }
      const result =
        kind === "queue"
          ? await (resume ? pawl.resumeQueue(name) : pawl.pauseQueue(name))
          : await (resume ? pawl.resumeJobType(name) : pawl.pauseJobType(name));
      if (flagOpt(args, "json")) ctx.out(json(result));
      else if (!result.changed) ctx.out(`${kind} ${name} was ${resume ? "not paused" : "already paused"}`);
      else
        ctx.out(
          `${verb}d ${kind} ${name}: ${plural(result.jobs, "job")} ${resume ? "PENDING again" : "held"}`,
        );
      return 0;
    },
  };
}

/** `pawl pause job|queue|type <id|name>`. */
export const pauseCommandEntry: Command = pauseCommand(false);
/** `pawl resume job|queue|type <id|name>`. */
export const resumeCommandEntry: Command = pauseCommand(true);

/** The table of `pawl paused`. */
export function pausesTable(pauses: readonly Pause[]): string {
  return table(
    ["KIND", "NAME", "JOBS HELD", "PAUSED AT", "BY"],
    pauses.map((p) => [p.kind, cell(p.name, 40), String(p.jobs), iso(p.pausedAt), cell(p.pausedBy, 40)]),
  );
}

/** `pawl paused [--jobs] [--json]`. */
export const pausedCommand: Command = {
  words: ["paused"],
  summary: "list paused queues and job types (and, with --jobs, paused jobs)",
  usage: "paused [--jobs] [--limit n] [--json]",
  details: "Lists the paused queues and job types with the jobs each holds; --jobs also lists PAUSED jobs.",
  options: {
    jobs: { type: "boolean", description: "also list the PAUSED jobs, newest first" },
    ...limitOption,
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const pawl = ctx.pawl();
    const pauses = await pawl.listPaused();
    const jobs = flagOpt(args, "jobs")
      ? await pawl.listJobs({ status: "PAUSED", limit: readLimit(args) })
      : null;
    if (flagOpt(args, "json")) {
      ctx.out(json(jobs ? { pauses, jobs } : pauses));
      return 0;
    }
    ctx.out(pauses.length === 0 ? "no queue or job type is paused" : pausesTable(pauses));
    if (jobs)
      ctx.out(
        jobs.length === 0 ? "no PAUSED jobs" : `${jobsTable(jobs)}\n(${plural(jobs.length, "paused job")})`,
      );
    return 0;
  },
};

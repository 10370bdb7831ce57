/**
 * Compile-time tests of typed jobs, checked by `npm run typecheck` (tsconfig.json includes test/): each
 * `@ts-expect-error` line must fail to compile, so typing that stops rejecting it fails the typecheck
 * (TS2578, unused directive), and every other line must compile, so typing that starts rejecting valid
 * use fails it too. Nothing here runs. The task maps are given per instance (`Pawl<Tasks>`): augmenting
 * `PawlTasks` here would type every other file of the program (test/unit/api/typed-augmentation.test.ts
 * compiles an augmented program of its own).
 */
import { z } from "zod";
import type { FlowCompletion, Pawl, PawlClient } from "../../src/index.js";
import { drain, fake, inline } from "../../src/testing/index.js";

type Tasks = {
  "email.send": { payload: { to: string }; result: { messageId: string } };
  "cache.flush": { payload: undefined };
  "report.build": { result: number };
  "import.row": { payload: { n: number } };
  "import.done": { payload: FlowCompletion<{ file: string }> };
};

declare const typed: Pawl<Tasks>;
declare const client: PawlClient<Tasks>;
declare const untyped: Pawl;

export async function enqueueing(): Promise<void> {
  await typed.enqueue("email.send", { to: "a@b.c" }, { priority: "high" });
  await typed.enqueue("cache.flush");
  await client.enqueue("email.send", { to: "a@b.c" });
  // @ts-expect-error a wrong payload
  await typed.enqueue("email.send", { to: 1 });
  // @ts-expect-error a missing payload (the map's does not accept undefined)
  await typed.enqueue("email.send");
  // @ts-expect-error a misspelled type
  await typed.enqueue("email.sned", { to: "a@b.c" });
  // @ts-expect-error a misspelled type, on a bare client
  await client.enqueue("emial.send", { to: "a@b.c" });

  await typed.enqueueMany([{ type: "email.send", payload: { to: "a" } }, { type: "cache.flush" }]);
  // @ts-expect-error a wrong payload in enqueueMany
  await typed.enqueueMany([{ type: "email.send", payload: { to: 2 } }]);
}

export function registering(): void {
  typed.register("email.send", async (payload) => ({ messageId: payload.to }));
  // @ts-expect-error a wrong handler return type
  typed.register("email.send", async (payload) => ({ messageId: payload.to.length }));
  // @ts-expect-error a handler that expects another payload
  typed.register("email.send", async (payload: { to: number }) => ({ messageId: String(payload.to) }));
  // @ts-expect-error a misspelled type
  typed.register("email.sendd", async () => ({ messageId: "m" }));
  typed.register("email.send", async (p) => ({ messageId: p.to }), {
    // @ts-expect-error a schema that disagrees with the map's payload
    validate: z.object({ to: z.number() }),
  });
  typed.register("email.send", async (p) => ({ messageId: p.to }), {
    validate: z.object({ to: z.string() }),
  });

  // No payload in the map: the schema types the handler.
  typed.register("report.build", async (p) => p.pages, { validate: z.object({ pages: z.number() }) });
  // @ts-expect-error a schema-typed handler payload (pages is a number)
  typed.register("report.build", async (p) => p.pages.length, { validate: z.object({ pages: z.number() }) });
}

export async function flows(): Promise<void> {
  await typed.chain([{ type: "email.send", payload: { to: "a" } }, { type: "cache.flush" }]);
  // @ts-expect-error a wrong chain step payload
  await typed.chain([{ type: "email.send", payload: { to: 1 } }]);
  // @ts-expect-error a misspelled chain step type
  await typed.chain([{ type: "email.snd", payload: { to: "a" } }]);
  await typed.batch({
    type: "import.row",
    items: [{ n: 1 }, { n: 2 }],
    onComplete: { type: "import.done", payload: { file: "rows.csv" } },
  });
  // @ts-expect-error a wrong batch item
  await typed.batch({ type: "import.row", items: [{ n: "1" }] });
  await typed.batch({
    type: "import.row",
    items: [{ n: 1 }],
    // @ts-expect-error a completion job whose payload is not a FlowCompletion
    onComplete: { type: "email.send", payload: { to: "a" } },
  });
  await typed.workflow({
    jobs: [
      { name: "a", type: "import.row", payload: { n: 1 } },
      { name: "b", type: "cache.flush", dependsOn: ["a"] },
    ],
  });
  // @ts-expect-error a wrong workflow job payload
  await typed.workflow({ jobs: [{ name: "a", type: "import.row", payload: { n: "1" } }] });
}

export async function scheduling(): Promise<void> {
  await typed.schedule("email.send", "0 3 * * *", { to: "a" });
  await typed.schedule("cache.flush", "0 3 * * *");
  await typed.schedule("nightly", "0 3 * * *", { to: "a" }, { type: "email.send", timezone: "UTC" });
  // @ts-expect-error a wrong scheduled payload
  await typed.schedule("email.send", "0 3 * * *", { to: 1 });
  // @ts-expect-error a schedule name that is no job type, without options.type
  await typed.schedule("nightly", "0 3 * * *", { to: "a" });
  // @ts-expect-error a wrong payload for options.type
  await typed.schedule("nightly", "0 3 * * *", { to: 2 }, { type: "email.send" });
}

export async function reading(id: string): Promise<void> {
  const job = await typed.getJob<"email.send">(id);
  const messageId: string | undefined = job?.result?.messageId;
  // @ts-expect-error getJob's result type (messageId is a string)
  const wrong: number | undefined = job?.result?.messageId;
  const any = await typed.getJob(id);
  if (any?.type === "email.send") {
    const to: string = any.payload.to;
    // @ts-expect-error narrowing on type narrows the result too
    const n: number | undefined = any.result?.messageId;
    void to;
    void n;
  }
  void messageId;
  void wrong;
}

export async function listing(): Promise<void> {
  const emails = await typed.listJobs({ type: "email.send", status: "SUCCEEDED" });
  const to: string | undefined = emails[0]?.payload.to;
  const messageId: string | undefined = emails[0]?.result?.messageId;
  // @ts-expect-error a type filter narrows the jobs (email.send's payload has no n)
  const n: number | undefined = emails[0]?.payload.n;
  // @ts-expect-error a misspelled type filter
  await typed.listJobs({ type: "email.sned" });
  const all = await typed.listJobs({ status: "DEAD" });
  for (const job of all) {
    if (job.type === "report.build") {
      const pages: number | null = job.result;
      // @ts-expect-error narrowing a listed job on type types its result (a number)
      const text: string | null = job.result;
      void pages;
      void text;
    }
  }
  const dead = await client.dlq.list({ type: "import.row" });
  const row: number | undefined = dead[0]?.payload.n;
  // @ts-expect-error a misspelled type filter on the dead letter queue
  await typed.dlq.list({ type: "import.rows" });
  // @ts-expect-error a misspelled type to purge
  await typed.dlq.purge({ type: "import.rows" });
  void to;
  void messageId;
  void n;
  void row;
}

export async function waiting(id: string): Promise<void> {
  const job = await typed.enqueue("email.send", { to: "a@b.c" });
  const done = await typed.waitFor(job, { timeoutMs: 1000 });
  const messageId: string | undefined = done.result?.messageId;
  // @ts-expect-error waitFor on enqueue's job knows its type (the result's messageId is a string)
  const wrong: number | undefined = done.result?.messageId;
  const byId = await typed.waitFor(id);
  const type: "email.send" | "cache.flush" | "report.build" | "import.row" | "import.done" = byId.type;
  const named = await typed.waitFor<"report.build">(id);
  const pages: number | null = named.result;
  // A job read as an untyped Job still waits (typed as any of the map's types).
  const read = (await untyped.getJob(id))!;
  await typed.waitFor(read);
  void messageId;
  void wrong;
  void type;
  void pages;
}

export function listening(): void {
  typed.on("job:dead", ({ job, reason }) => {
    const t: "email.send" | "cache.flush" | "report.build" | "import.row" | "import.done" = job.type;
    // @ts-expect-error an event's job type is one of the map's names
    const other: "email.sent" = job.type;
    void t;
    void other;
    void reason;
  });
  typed.on("claim", ({ jobs }) => {
    // @ts-expect-error claimed jobs' types are the map's names
    if (jobs[0]?.type === "nope") return;
  });
  typed.on("recurring:fired", ({ type }) => {
    // @ts-expect-error a fired schedule's type is one of the map's names
    if (type === "nope") return;
  });
  untyped.on("job:dead", ({ job }) => {
    const t: string = job.type;
    if (t === "anything") return;
  });
}

export async function testingHelpers(): Promise<void> {
  const recorder = fake(typed);
  recorder.assertEnqueued("email.send", { to: "a@b.c" });
  recorder.assertEnqueued("email.send", (p) => p.to.endsWith("@b.c"));
  // @ts-expect-error a misspelled type in assertEnqueued
  recorder.assertEnqueued("email.sent");
  // @ts-expect-error a predicate over the wrong payload
  recorder.assertNotEnqueued("email.send", (p) => p.to > 1);
  const [first] = recorder.enqueuedOf("email.send");
  const to: string | undefined = first?.payload.to;
  await drain(typed, { types: ["email.send"] });
  // @ts-expect-error a misspelled type in drain's types
  await drain(typed, { types: ["email.sendd"] });
  await inline(typed, async () => typed.enqueue("cache.flush"));
  const { jobs } = await drain(typed);
  const attempt = jobs[0];
  if (attempt?.type === "email.send") {
    const m: string | undefined = attempt.result?.messageId;
    // @ts-expect-error drain's attempts are typed by the map (messageId is a string)
    const wrongResult: number | undefined = attempt.result?.messageId;
    void m;
    void wrongResult;
  }
  const mode = inline(typed);
  for (const r of mode.results) {
    // @ts-expect-error inline's attempts name the map's types
    if (r.type === "email.sent") continue;
  }
  await mode.restore();
  void to;
}

export async function untypedUse(): Promise<void> {
  const job = await untyped.enqueue("anything", { n: 1 });
  const n: number = job.payload.n;
  await untyped.enqueue("no.payload");
  await untyped.enqueue<{ q: number }>("explicit", { q: 1 });
  // @ts-expect-error an explicit payload type is still checked
  await untyped.enqueue<{ q: number }>("explicit", { q: "1" });
  await untyped.enqueueMany([{ type: "a", payload: 1 }, { type: "b" }]);
  untyped.register("anything", async (p: { to: string }) => p.to);
  untyped.register("anything", async (p) => p.a, { validate: z.object({ a: z.number() }) });
  // @ts-expect-error a schema-typed handler payload without a map
  untyped.register("anything", async (p) => p.a.length, { validate: z.object({ a: z.number() }) });
  untyped.register("anything", async (p) => p, { validate: (v) => typeof v === "object" });
  await untyped.chain([{ type: "a" }, { type: "b", payload: 1 }], { onComplete: { type: "c" } });
  await untyped.batch({ type: "row", items: [1, 2] });
  await untyped.workflow({ jobs: [{ name: "a", type: "t" }] });
  await untyped.schedule("nightly", "0 3 * * *");
  await untyped.schedule("nightly", "0 3 * * *", { a: 1 }, { type: "x" });
  const read = await untyped.getJob("1");
  const result: unknown = read?.result;
  fake(untyped).assertEnqueued("whatever", { a: 1 });
  await drain(untyped, { types: ["whatever"] });
  void n;
  void result;
}

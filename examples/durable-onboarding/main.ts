/**
 * A signup drip as one durable handler (docs/durable.md): a welcome email, a "three-day" wait (shortened
 * here to DRIP_DAY_MS per day), a tips email, and a second wait that a signal ends early: when the user
 * upgrades, `pawl.signal(jobId, plan, { name: "upgraded" })` skips the nudge and sends a thank-you.
 *
 * Each email is a step: recorded once, never sent twice, even though the handler runs again from the top
 * after every wait (and after a crash or a deploy). The mailer gets the step's idempotency key, which a
 * real provider would use to deduplicate a send retried after a crash.
 *
 * With `--once` (or PAWL_EXAMPLE_DURATION_MS) it signs up six users, upgrades two of them during their
 * wait, and exits 0 only if every drip ended as expected with each email sent exactly once.
 */
import { createPawl, type JobContext } from "pawl";
import { databaseUrl, lifecycle } from "../shared/lifecycle.js";

const life = lifecycle("durable-onboarding");
const schema = process.env.PAWL_SCHEMA ?? "pawl_durable_onboarding_example";
/** One "day" of the drip; three days are 3 * dayMs. Real drips use 86_400_000. */
const dayMs = Number(process.env.DRIP_DAY_MS ?? 150);

const pawl = createPawl({ connectionString: databaseUrl, schema, concurrency: 8, pollIntervalMs: 200 });

/** The outbox: a stand-in for an email provider that deduplicates by key. */
const sent = new Map<string, string>();
function sendEmail(to: string, template: string, idempotencyKey: string): { id: string } {
  if (!sent.has(idempotencyKey)) sent.set(idempotencyKey, `${template} -> ${to}`);
  return { id: idempotencyKey };
}

interface Signup {
  email: string;
}

pawl.register("onboarding.drip", async (user: Signup, ctx: JobContext) => {
  await ctx.step("welcome-email", (s) => sendEmail(user.email, "welcome", s.idempotencyKey));
  // Three "days": the job parks, holding no slot, no connection and no node, and any node resumes it.
  await ctx.sleep("wait-3-days", 3 * dayMs);
  await ctx.step("tips-email", (s) => sendEmail(user.email, "tips", s.idempotencyKey));
  // Wait up to three more days for an upgrade; a signal sent before this point is kept, not lost.
  const upgrade = await ctx.waitForSignal<{ plan: string }>("upgraded", { timeoutMs: 3 * dayMs });
  if (upgrade.timedOut) {
    await ctx.step("nudge-email", (s) => sendEmail(user.email, "nudge", s.idempotencyKey));
    return { outcome: "nudged" };
  }
  await ctx.step("thanks-email", (s) =>
    sendEmail(user.email, `thanks-${upgrade.payload.plan}`, s.idempotencyKey),
  );
  return { outcome: "upgraded", plan: upgrade.payload.plan };
});

let drips = 0;
pawl.on("job:waiting", (e) => {
  if (e.durable) life.progress(`job ${e.job.id} parked on step '${e.durable.step}' (${e.durable.reason})`);
});
pawl.on("job:succeeded", () => drips++);

await pawl.migrate();
await pawl.start();

/** The brief run's scenario and its check. */
async function scenario(): Promise<boolean> {
  const users = Array.from({ length: 6 }, (_, i) => ({ email: `user${i}@example.test` }));
  const jobs = await Promise.all(users.map((u) => pawl.enqueue("onboarding.drip", u)));
  // Two users upgrade a "day" into their first wait: early for the wait, so the signal is kept.
  setTimeout(() => {
    for (const job of jobs.slice(0, 2)) {
      void pawl
        .signal(job.id, { plan: "pro" }, { name: "upgraded" })
        .then((r) => life.progress(`signaled job ${job.id}: ${r.status}`));
    }
  }, dayMs);
  const done = await Promise.all(jobs.map((j) => pawl.waitFor(j, { timeoutMs: 60_000 })));
  const outcomes = done.map((j) => (j.result as { outcome: string }).outcome);
  life.progress(`outcomes: ${outcomes.join(", ")}; emails sent: ${sent.size}`);
  const steps = await pawl.getJob(jobs[0]!.id);
  life.progress(`job ${jobs[0]!.id} status ${steps?.status}`);
  const expected = ["upgraded", "upgraded", "nudged", "nudged", "nudged", "nudged"];
  // Each user: welcome + tips + (thanks or nudge), each exactly once.
  return JSON.stringify(outcomes) === JSON.stringify(expected) && sent.size === users.length * 3;
}

const ok =
  life.durationMs !== null ? await scenario().catch((e: unknown) => (life.log(String(e)), false)) : true;
const reason = await life.stopping;
life.log(`${reason}: stopping (${drips} drips finished)`);
await pawl.stop({ graceMs: 5_000 });
await pawl.close();
if (!ok) {
  life.log("the scenario did not end as expected");
  process.exit(1);
}
life.log("stopped");
process.exit(0);

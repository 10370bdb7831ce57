import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { progressBar } from "../../../src/cli/commands/flows.js";
import type { PawlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { runCliOn } from "../../helpers/cli.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ccli"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

describe("composition in the CLI", () => {
  it("draws progress bars", () => {
    expect(progressBar(0, 10, 10)).toBe("[----------]   0%");
    expect(progressBar(5, 10, 10)).toBe("[#####-----]  50%");
    expect(progressBar(10, 10, 10)).toBe("[##########] 100%");
  });

  it("lists flows with their progress and shows one with its members", async () => {
    const batch = await pawl.batch({ type: "cli.row", items: [1, 2, 3, 4], name: "cli-batch" });
    // Two children finish (as a node would write them); the flow's counters follow at commit.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET status = 'SUCCEEDED', finished_at = now()
       WHERE flow_id = $1 AND flow_step IN ('0', '1')`,
      [batch.flowId],
    );
    const chain = await pawl.chain([{ type: "cli.a" }, { type: "cli.b" }], { name: "cli-chain" });

    const list = await runCliOn(schema, "flows");
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(`${batch.flowId}\\s+batch\\s+cli-batch\\s+running\\s+\\[#####-----\\]  50%\\s+2/4`),
    );
    expect(list.stdout).toMatch(new RegExp(`${chain.flowId}\\s+chain\\s+cli-chain\\s+running`));
    expect(list.stdout).toContain("(2 flows)");

    const batches = await runCliOn(schema, "flows", "--kind", "batch", "--json");
    expect(JSON.parse(batches.stdout)).toMatchObject([{ id: batch.flowId, succeeded: 2, remaining: 2 }]);
    expect((await runCliOn(schema, "flows", "--kind", "dag")).code).toBe(2);

    const detail = await runCliOn(schema, "flow", chain.flowId);
    expect(detail.code).toBe(0);
    expect(detail.stdout).toContain(`flow ${chain.flowId} (chain "cli-chain")  running`);
    expect(detail.stdout).toMatch(/0\s+\d+\s+cli\.a\s+PENDING/);
    expect(detail.stdout).toMatch(/1\s+\d+\s+cli\.b\s+WAITING \(dependencies\)/);
    expect(await runCliOn(schema, "flow", "999999999")).toMatchObject({
      code: 1,
      stderr: "pawl: no flow with id 999999999\n",
    });
  });

  it("shows WAITING and PAUSED jobs, pauses and resumes, and reports a refused signal", async () => {
    const job = await pawl.enqueue("cli.pausable", {});
    expect((await runCliOn(schema, "pause", "job", job.id)).stdout).toBe(
      `paused job ${job.id}: now PAUSED\n`,
    );
    const jobs = await runCliOn(schema, "jobs", "--status", "paused,waiting");
    expect(jobs.code).toBe(0);
    expect(jobs.stdout).toMatch(new RegExp(`${job.id}\\s+cli\\.pausable\\s+default\\s+PAUSED`));
    expect((await runCliOn(schema, "resume", "job", job.id)).stdout).toBe(
      `resumed job ${job.id}: now PENDING\n`,
    );

    const paused = await runCliOn(schema, "pause", "queue", "cli-q");
    expect(paused).toMatchObject({ code: 0, stdout: "paused queue cli-q: 0 jobs held\n" });
    await pawl.enqueue("cli.held", {}, { queue: "cli-q" });
    const list = await runCliOn(schema, "paused", "--jobs");
    expect(list.stdout).toMatch(/queue\s+cli-q\s+1\s+/);
    expect(list.stdout).toMatch(/cli\.held\s+cli-q\s+PAUSED/);
    expect((await runCliOn(schema, "resume", "queue", "cli-q")).stdout).toBe(
      "resumed queue cli-q: 1 job PENDING again\n",
    );
    expect((await runCliOn(schema, "resume", "queue", "cli-q")).stdout).toBe("queue cli-q was not paused\n");
    expect((await runCliOn(schema, "pause", "everything", "x")).code).toBe(2);

    const refused = await runCliOn(schema, "signal", job.id, '{"ok":true}');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`job ${job.id} is not waiting for a signal (it is PENDING)`);
  });
});

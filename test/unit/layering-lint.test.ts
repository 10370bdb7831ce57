/**
 * The layering rules in eslint.config.js, shown to bite: each planted import below breaks one rule and
 * must be reported, while the same file without it is clean. `npm run lint` runs the same configuration
 * over the tree, so a violation in real code fails CI.
 */
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint({ cwd: new URL("../../", import.meta.url).pathname });

async function restrictedImports(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("the layering lint rules", () => {
  it.each([
    ["logic imports xstate", "src/logic/planted.ts", `import { createActor } from "xstate";`],
    [
      "logic imports the store",
      "src/logic/planted.ts",
      `import { claimJobs } from "../store/claim-jobs.js";`,
    ],
    ["logic does I/O", "src/logic/planted.ts", `import { readFileSync } from "node:fs";`],
    [
      "a machine imports the runtime",
      "src/machines/planted.ts",
      `import { NodeRuntime } from "../runtime/node-runtime.js";`,
    ],
    [
      "the runtime imports observability",
      "src/runtime/planted.ts",
      `import { pawlMetrics } from "../../observability/metrics.js";`,
    ],
    ["the runtime holds a transport client", "src/runtime/planted.ts", `import amqp from "amqplib";`],
    ["the store imports the runtime", "src/store/planted.ts", `import { Lanes } from "../runtime/lanes.js";`],
    [
      "composition imports the runtime",
      "src/composition/planted.ts",
      `import { Lanes } from "../runtime/lanes.js";`,
    ],
    [
      "a transport imports another",
      "coordinators/amqp/planted.ts",
      `import { PostgresCoordinator } from "../postgres/postgres-coordinator.js";`,
    ],
  ])("reports it when %s", async (_what, filePath, planted) => {
    const messages = await restrictedImports(filePath, `${planted}\nexport const x = 1;\nvoid x;\n`);
    expect(messages).toHaveLength(1);
  });

  it("accepts the imports each layer is allowed", async () => {
    expect(
      await restrictedImports(
        "src/logic/planted.ts",
        `import { ValidationError } from "../errors.js";\nexport { ValidationError };\n`,
      ),
    ).toEqual([]);
    expect(
      await restrictedImports(
        "src/runtime/planted.ts",
        `import { jobTaskMachine } from "../machines/job-task-machine.js";\nexport { jobTaskMachine };\n`,
      ),
    ).toEqual([]);
    expect(
      await restrictedImports(
        "coordinators/amqp/planted.ts",
        `import type { Coordinator } from "../spi.js";\nexport type { Coordinator };\n`,
      ),
    ).toEqual([]);
  });
});

/**
 * The architecture checks, shown to bite. The order of pawl's layers and the ban on import cycles are
 * dependency-cruiser rules (.dependency-cruiser.cjs); each case below plants a tiny tree in a temporary
 * folder, cruises it with the project's own rule set, and expects exactly the rules named. The purity and
 * transport-client rules are eslint's (eslint.config.js), planted the same way. `npm run check:layers` and
 * `npm run lint` run the same configurations over the real tree, so a violation there fails CI.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { cruise, type IConfiguration, type ICruiseResult } from "dependency-cruiser";
import { ESLint } from "eslint";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = new URL("../../../", import.meta.url).pathname;
const ruleSet = createRequire(import.meta.url)(join(repoRoot, ".dependency-cruiser.cjs")) as IConfiguration;

let planted: string | null = null;
afterEach(() => {
  if (planted) rmSync(planted, { recursive: true, force: true });
  planted = null;
});

/** Writes `files` (path -> source) into a fresh folder and returns the rules they break, sorted. */
async function violations(files: Record<string, string>): Promise<string[]> {
  planted = mkdtempSync(join(tmpdir(), "pawl-layers-"));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(planted, path)), { recursive: true });
    writeFileSync(join(planted, path), source);
  }
  const roots = [...new Set(Object.keys(files).map((p) => p.split("/")[0]!))];
  const { output } = await cruise(roots, {
    baseDir: planted,
    validate: true,
    ruleSet: { forbidden: ruleSet.forbidden },
    tsPreCompilationDeps: true,
  });
  return (output as ICruiseResult).summary.violations.map((v) => v.rule.name).sort();
}

const exporting = (name: string) => `export type ${name} = number;\n`;

describe("the layer order (dependency-cruiser)", () => {
  it.each([
    ["core imports the node", "src/core/a.ts", "src/node/b.ts", "layer-core"],
    ["logic imports the store", "src/logic/a.ts", "src/store/b.ts", "layer-logic"],
    ["the store imports the node", "src/store/jobs/a.ts", "src/node/b.ts", "layer-store"],
    ["composition imports the api", "src/composition/a.ts", "src/api/b.ts", "layer-composition"],
    ["input imports the store", "src/input/a.ts", "src/store/b.ts", "layer-input"],
    ["a transport imports the node", "coordinators/amqp/a.ts", "src/node/b.ts", "layer-coordinators"],
    ["the node imports observability", "src/node/a.ts", "observability/b.ts", "layer-node"],
    ["the cli imports pawl/testing (a sibling)", "src/cli/a.ts", "src/testing/b.ts", "layer-cli"],
  ])("reports it when %s", async (_what, from, to, rule) => {
    const spec = to.replace(/^src\//, "../".repeat(from.split("/").length - 2)).replace(/\.ts$/, "");
    const relative = from.startsWith("coordinators/") ? `../../${to.replace(/\.ts$/, "")}` : spec;
    expect(
      await violations({
        [from]: `import type { B } from "${relative}";\nexport type A = B;\n`,
        [to]: exporting("B"),
      }),
    ).toEqual([rule]);
  });

  it("reports a cycle made of type-only imports", async () => {
    expect(
      await violations({
        "src/store/a.ts": `import type { B } from "./b";\nexport type A = { b?: B };\n`,
        "src/store/b.ts": `import type { A } from "./a";\nexport type B = { a?: A };\n`,
      }),
    ).toEqual(["no-cycle"]);
  });

  it("accepts imports that point down the layers, and the SPI from core", async () => {
    expect(
      await violations({
        "src/node/a.ts": `import type { B } from "../store/b";\nimport type { C } from "../core/c";\nexport type A = [B, C];\n`,
        "src/store/b.ts": exporting("B"),
        "src/core/c.ts": `import type { S } from "../../coordinators/spi";\nexport type C = S;\n`,
        "coordinators/spi.ts": exporting("S"),
      }),
    ).toEqual([]);
  });
});

const eslint = new ESLint({ cwd: repoRoot });

async function restrictedImports(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport const x = 1;\nvoid x;\n`, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("purity and transport clients (eslint)", () => {
  it.each([
    ["logic imports xstate", "src/logic/planted.ts", `import { createActor } from "xstate";`],
    ["logic does I/O", "src/logic/planted.ts", `import { readFileSync } from "node:fs";`],
    ["a machine queries the database", "src/machines/planted.ts", `import pg from "pg";`],
    ["the node holds a transport client", "src/node/planted.ts", `import amqp from "amqplib";`],
    ["the store loads prom-client", "src/store/planted.ts", `import client from "prom-client";`],
    [
      "a transport imports another",
      "coordinators/amqp/planted.ts",
      `import { PostgresCoordinator } from "../postgres/postgres-coordinator.js";`,
    ],
  ])("reports it when %s", async (_what, filePath, planted) => {
    expect(await restrictedImports(filePath, planted)).toHaveLength(1);
  });

  it("accepts the imports each part is allowed", async () => {
    expect(
      await restrictedImports("src/logic/planted.ts", `import { ValidationError } from "../core/errors.js";`),
    ).toEqual([]);
    expect(await restrictedImports("src/node/planted.ts", `import { createActor } from "xstate";`)).toEqual(
      [],
    );
    expect(
      await restrictedImports(
        "coordinators/amqp/planted.ts",
        `import type { Coordinator } from "../spi.js";`,
      ),
    ).toEqual([]);
  });
});

/**
 * Every module system a user's project may have, against the packed package (docs/guide/modules.md):
 *
 * - the community's checkers on the tarball: @arethetypeswrong/cli (profile `esm-only`: pawl is ESM, and
 *   TypeScript's `node16` cannot see Node's require(esm)) and publint (strict);
 * - `require()` of every entry from CommonJS (Node's require(esm), which needs a graph without top-level
 *   await), and a job run through `require("pawl")`; `import` of every entry from ESM;
 * - tsc with `moduleResolution` node16, nodenext (ESM and CommonJS files) and bundler (with skipLibCheck,
 *   as most projects have it: pawl's declarations name the optional peers' types, docs/guide/modules.md);
 * - esbuild bundles of a worker, ESM and CommonJS, run from a folder with no node_modules: each starts a
 *   node and runs a job against the real PostgreSQL;
 * - what `pawl/client` loads: no xstate and none of the node's runtime (scripts/import-footprint.mjs).
 *
 * The project installs pg and @types/pg at the lowest versions pawl's peer ranges admit, so the ranges are
 * what is tested. Everything it creates (the project, the tarball, its schemas) is removed afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, type Format } from "esbuild";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dropSchema, testPool, uniqueSchema } from "../helpers/db.js";
import { ok, packTarball, repoPackage, root, sh, type Packed } from "./packed.js";

const tmp = mkdtempSync(join(tmpdir(), "pawl-formats-"));
const app = join(tmp, "app");
const bundles = join(tmp, "bundles");
const schemas: string[] = [];
const pool = testPool(1);
let packed: Packed;

/** The package's entries as a user imports them ("pawl", "pawl/client", ...), from its exports map. */
const entries = Object.keys(repoPackage.exports)
  .filter((k) => k !== "./package.json")
  .map((k) => (k === "." ? "pawl" : `pawl/${k.slice(2)}`));

/** The lowest version a caret range admits ("^8.11.0" -> "8.11.0"). */
const lowest = (range: string | undefined) => {
  const m = /^\^(\d+\.\d+\.\d+)$/.exec(range ?? "");
  if (!m) throw new Error(`expected a caret range, got ${range}`);
  return m[1]!;
};

const tsc = join(root, "node_modules/typescript/bin/tsc");
const node = (file: string, ...args: string[]) => sh(process.execPath, [file, ...args], app);
const schema = (name: string) => {
  const s = uniqueSchema(name);
  schemas.push(s);
  return s;
};

/** A worker as an application writes one: registers a handler, starts, enqueues, waits, reports. */
const worker = `import { createPawl } from "pawl";

async function main(): Promise<void> {
  const pawl = createPawl({ connectionString: process.env.DATABASE_URL, schema: process.argv[2] });
  await pawl.migrate();
  pawl.register("bundle.double", async (payload: { n: number }) => ({ doubled: payload.n * 2 }));
  const succeeded = new Promise<string>((resolve) => pawl.on("job:succeeded", (e) => resolve(e.job.id)));
  await pawl.start();
  const job = await pawl.enqueue("bundle.double", { n: 21 });
  const id = await succeeded;
  const done = await pawl.getJob(job.id);
  await pawl.stop();
  await pawl.close();
  console.log(JSON.stringify({ same: id === job.id, status: done?.status, result: done?.result }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;

beforeAll(async () => {
  packed = await packTarball(tmp);
  mkdirSync(app);
  mkdirSync(bundles);
  // A CommonJS project (no "type"), as NestJS, Jest and many existing services are.
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "pawl-formats", private: true }));
  const peers = repoPackage.peerDependencies;
  await ok(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      join(tmp, packed.filename),
      `pg@${lowest(peers.pg)}`,
      `@types/pg@${lowest(peers["@types/pg"])}`,
      `prom-client@${repoPackage.devDependencies["prom-client"]}`,
    ],
    app,
    240_000,
  );
}, 480_000);

afterAll(async () => {
  for (const s of schemas) await dropSchema(pool, s);
  await pool.end();
  rmSync(tmp, { recursive: true, force: true });
});

describe("the community's checkers on the tarball", () => {
  it("@arethetypeswrong/cli finds no problem for an ESM package, in any entry", async () => {
    const attw = join(root, "node_modules/@arethetypeswrong/cli/dist/index.js");
    const tarball = join(tmp, packed.filename);
    const r = await sh(process.execPath, [attw, tarball, "--profile", "esm-only", "--format", "json"], app);
    const report = JSON.parse(r.stdout) as {
      analysis: {
        entrypoints: Record<string, unknown>;
        problems: { kind: string; resolutionKind?: string }[];
      };
    };
    expect(Object.keys(report.analysis.entrypoints)).toEqual([...Object.keys(repoPackage.exports)]);
    // The esm-only profile ignores node10 (no exports map) and TypeScript's node16 view of require(),
    // which predates Node's require(esm); the require() test below runs the real thing.
    const counted = report.analysis.problems.filter(
      (p) => !["node10", "node16-cjs"].includes(p.resolutionKind ?? ""),
    );
    expect(counted).toEqual([]);
    expect(r.code).toBe(0);
  });

  it("publint, strict, finds nothing", async () => {
    const publint = join(root, "node_modules/publint/src/cli.js");
    const r = await sh(process.execPath, [publint, "run", join(tmp, packed.filename), "--strict"], app);
    expect(r.stdout + r.stderr).toContain("All good");
    expect(r.code).toBe(0);
  });
});

describe("Node", () => {
  it("require()s every entry from CommonJS, and runs a job through require('pawl')", async () => {
    writeFileSync(
      join(app, "require-all.cjs"),
      `const loaded = {};
for (const entry of ${JSON.stringify(entries)}) loaded[entry] = Object.keys(require(entry)).length;
const { createPawl } = require("pawl");
const { createClient } = require("pawl/client");
const { createMetrics } = require("pawl/observability");
async function main() {
  const schema = process.argv[2];
  const pawl = createPawl({ connectionString: process.env.DATABASE_URL, schema });
  await pawl.migrate();
  const metrics = createMetrics(pawl);
  pawl.register("cjs.double", async (payload) => ({ doubled: payload.n * 2 }));
  await pawl.start();
  const client = createClient({ connectionString: process.env.DATABASE_URL, schema });
  const job = await client.enqueue("cjs.double", { n: 21 });
  const done = await client.waitFor(job.id, { timeoutMs: 20000 });
  const scrape = await metrics.metrics();
  metrics.close();
  await client.close();
  await pawl.stop();
  await pawl.close();
  console.log(JSON.stringify({ loaded, status: done.status, result: done.result, scraped: scrape.includes("pawl_jobs_started_total") }));
}
main().catch((e) => { console.error(e); process.exitCode = 1; });
`,
    );
    const r = await node("require-all.cjs", schema("fmt_cjs"));
    expect(r.stderr).not.toContain("ERR_REQUIRE");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out.loaded)).toEqual(entries);
    for (const entry of entries) expect(out.loaded[entry], entry).toBeGreaterThan(0);
    expect(out).toMatchObject({ status: "SUCCEEDED", result: { doubled: 42 }, scraped: true });
  });

  it("imports every entry from ESM", async () => {
    writeFileSync(
      join(app, "import-all.mjs"),
      `const loaded = {};
for (const entry of ${JSON.stringify(entries)}) loaded[entry] = Object.keys(await import(entry)).length;
const pawl = await import("pawl");
const client = await import("pawl/client");
// One class per error: pawl/client re-exports pawl's, so instanceof holds across the two.
loaded.sameErrors = pawl.ValidationError === client.ValidationError;
console.log(JSON.stringify(loaded));
`,
    );
    const r = await node("import-all.mjs");
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    for (const entry of entries) expect(out[entry], entry).toBeGreaterThan(0);
    expect(out.sameErrors).toBe(true);
  });

  it("loads neither xstate nor the node's runtime for pawl/client, and both for pawl", async () => {
    copyFileSync(join(root, "scripts/import-footprint.mjs"), join(app, "import-footprint.mjs"));
    const measure = async (entry: string) => {
      const r = await node("import-footprint.mjs", entry);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { packages: string[]; runtimeModules: number; pawlModules: number };
    };
    const client = await measure("pawl/client");
    const full = await measure("pawl");
    // The control: the same measure sees xstate and the runtime in the main entry.
    expect(full.packages).toContain("xstate");
    expect(full.runtimeModules).toBeGreaterThan(0);
    expect(client.packages).not.toContain("xstate");
    expect(client.packages).not.toContain("croner");
    expect(client.runtimeModules).toBe(0);
    expect(client.pawlModules).toBeLessThan(full.pawlModules);
  });
});

describe("TypeScript", () => {
  // Every entry, used: a value and a type from each, so a missing declaration or a wrong path fails.
  const consumer = `import { createPawl, type JobContext, type Job } from "pawl";
import { createClient, type EnqueueOptions } from "pawl/client";
import { drain } from "pawl/testing";
import { createCoordinator, type Coordinator } from "pawl/coordinators";
import { createConsole, createInspector, createMetrics, type PawlMetrics } from "pawl/observability";
import type pg from "pg";

const pawl = createPawl({ schema: "pawl" });
pawl.register("email.send", async (payload: { to: string }, ctx: JobContext) => ({ sent: payload.to, at: ctx.attempt }));
const options: EnqueueOptions = { priority: "high" };
export const job: Promise<Job | null> = createClient({ schema: "pawl" }).getJob("1");
export const enqueued = pawl.enqueue("email.send", { to: "a@b.c" }, options);
export const drained: typeof drain = drain;
export const coordinator: Promise<Coordinator> = createCoordinator("none", { nodeId: "n", connectionString: "postgres://x", schema: "pawl" });
export const metrics: () => PawlMetrics = () => createMetrics(pawl);
// The observability functions take a node as the declarations describe it (stripInternal must leave
// what they read).
export const views = () => [createInspector(pawl), createConsole(pawl)];
export const pool = (p: pg.Pool) => createPawl({ pool: p });
`;
  const check = async (name: string, options: Record<string, string>, files: Record<string, string>) => {
    const dir = join(app, `ts-${name}`);
    mkdirSync(dir);
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", strict: true, noEmit: true, skipLibCheck: true, ...options },
        files: Object.keys(files),
      }),
    );
    return sh(process.execPath, [tsc, "-p", dir], app);
  };

  it.each([
    ["node16", { module: "Node16", moduleResolution: "Node16" }, { "consumer.mts": consumer }],
    [
      "nodenext",
      { module: "NodeNext", moduleResolution: "NodeNext" },
      // A CommonJS file too: TypeScript's nodenext knows that Node can require() this ESM package.
      { "consumer.mts": consumer, "consumer.cts": consumer },
    ],
    ["bundler", { module: "ESNext", moduleResolution: "Bundler" }, { "consumer.ts": consumer }],
  ])(
    "type-checks a consumer of every entry under moduleResolution %s",
    async (name, options, files) => {
      const r = await check(name, options, files);
      expect(r.stdout + r.stderr).toBe("");
      expect(r.code).toBe(0);
    },
    180_000,
  );

  it("fails a wrong use (the check can fail)", async () => {
    const r = await check(
      "wrong",
      { module: "NodeNext", moduleResolution: "NodeNext" },
      {
        "wrong.mts": `import { createClient } from "pawl/client";\nexport const n: number = createClient().enqueue("x", {});\n`,
      },
    );
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain("TS2322");
  }, 180_000);
});

describe("an esbuild bundle of a worker", () => {
  // pg-native is pg's optional native binding; the optional peers this worker does not use stay out of
  // the bundle (each is loaded by name only when chosen, and named in a MissingDependencyError if absent).
  const external = ["pg-native", ...Object.keys(repoPackage.peerDependencies).filter((p) => p !== "pg")];

  it.each(["esm", "cjs"] as Format[])(
    "as %s starts a node and runs a job, with no node_modules",
    async (format) => {
      writeFileSync(join(app, "worker.ts"), worker);
      const outfile = join(bundles, format === "esm" ? "worker.mjs" : "worker.cjs");
      const result = await build({
        absWorkingDir: app,
        entryPoints: ["worker.ts"],
        bundle: true,
        platform: "node",
        target: "node20",
        format,
        outfile,
        external,
        logLevel: "silent",
        // pg is CommonJS: in an ESM bundle its require() of Node's modules needs a real require.
        ...(format === "esm"
          ? {
              banner: {
                js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);',
              },
            }
          : {}),
      });
      expect(result.errors).toEqual([]);
      const r = await sh(process.execPath, [outfile, schema(`fmt_${format}`)], bundles);
      // pg-listen, an optional peer, is left out of this bundle: the default coordinator (auto) says, once,
      // that the node polls instead of listening, and nothing else reaches stderr.
      const lines = r.stderr.split("\n").filter((l) => l.trim() !== "");
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: "warn" });
      expect(lines[0]).toContain("pg-listen is not installed");
      expect(JSON.parse(r.stdout)).toEqual({ same: true, status: "SUCCEEDED", result: { doubled: 42 } });
    },
  );
});

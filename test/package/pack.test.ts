/**
 * The published package, as a user gets it: `npm pack` (after the build: test/package/packed.ts), then an install
 * of the tarball into a fresh project that has only `pg` besides it. There a job runs through
 * `import { createPawl } from "pawl"` against the local PostgreSQL, `tsc` type-checks a consumer file
 * against the shipped declarations, the bin answers `--version` and `migrate --check`, the optional peers
 * are reported by name when missing, and after `npm install prom-client` `pawl/observability` serves
 * metrics. This proves the exports, the types, the bin, the source maps and the migrations ship and load.
 * Everything it creates (the temporary project, the tarball, its schema) is removed afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../helpers/db.js";
import { ok, packTarball, repoPackage, root, sh, type Packed } from "./packed.js";

const optionalPeers = [
  "@types/pg",
  "@electric-sql/pglite",
  "@electric-sql/pglite-socket",
  "@opentelemetry/api",
  "@statelyai/inspect",
  "amqplib",
  "hazelcast-client",
  "pg-listen",
  "prom-client",
];

const tmp = mkdtempSync(join(tmpdir(), "pawl-pack-"));
const app = join(tmp, "app");
const schema = uniqueSchema("pack");
const pool = testPool(1);

const node = (script: string, ...args: string[]) => ok(process.execPath, [script, ...args], app);
const pawlBin = (...args: string[]) => sh(join(app, "node_modules/.bin/pawl"), args, app);

let packed: Packed;

beforeAll(async () => {
  packed = await packTarball(tmp);
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "pawl-pack-consumer", private: true, type: "module" }),
  );
  await ok(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      join(tmp, packed.filename),
      `pg@${repoPackage.devDependencies.pg}`,
    ],
    app,
    240_000,
  );
}, 480_000);

afterAll(async () => {
  await dropSchema(pool, schema);
  await pool.end();
  rmSync(tmp, { recursive: true, force: true });
});

describe("the tarball", () => {
  it("holds the build, the bin, the migrations, the README, the LICENSE, the Grafana dashboard and the alert rules, and no tests or benchmarks", () => {
    const paths = packed.files.map((f) => f.path);
    for (const required of [
      "package.json",
      "README.md",
      "LICENSE",
      "bin/pawl.js",
      "dist/src/index.js",
      "dist/src/index.d.ts",
      "dist/src/index.js.map",
      "dist/src/store/migrations/migrations.generated.js",
      "dist/coordinators/index.js",
      "dist/observability/index.js",
      "dist/src/testing/index.js",
      "dist/src/cli/main.js",
      "migrations/0001_init.sql",
      // docs/observability.md points users at these two, in the package they installed.
      "observability/grafana/pawl.json",
      "observability/prometheus/alerts.yml",
    ]) {
      expect(paths).toContain(required);
    }
    const stray = paths.filter(
      (p) =>
        !/^(package\.json|README\.md|LICENSE|bin\/pawl\.js|migrations\/\d{4}_[a-z0-9_]+\.sql)$/.test(p) &&
        !/^observability\/(grafana\/[a-z0-9-]+\.json|prometheus\/alerts\.yml)$/.test(p) &&
        !/^dist\/(src|coordinators|observability)\//.test(p),
    );
    expect(stray).toEqual([]);
    expect(paths.filter((p) => /bench|\.test\.|(^|\/)test\/|examples\//.test(p))).toEqual([]);
  });

  it("installs with pg, xstate and croner, and none of the optional peers", () => {
    for (const dep of ["pawl", "pg", "xstate", "croner"]) {
      expect(existsSync(join(app, "node_modules", dep, "package.json")), dep).toBe(true);
    }
    for (const peer of optionalPeers) expect(existsSync(join(app, "node_modules", peer)), peer).toBe(false);
    const installed = JSON.parse(readFileSync(join(app, "node_modules/pawl/package.json"), "utf8"));
    // pg is the one required peer: the application's own copy, shared (docs/guide/modules.md).
    expect(Object.keys(installed.peerDependencies).sort()).toEqual([...optionalPeers, "pg"].sort());
    for (const peer of optionalPeers)
      expect(installed.peerDependenciesMeta[peer]).toEqual({ optional: true });
  });

  it("ships source maps that carry their TypeScript", async () => {
    const map = JSON.parse(readFileSync(join(app, "node_modules/pawl/dist/src/index.js.map"), "utf8"));
    expect(map.sources).toEqual(["../../src/index.ts"]);
    expect(map.sourcesContent?.[0]).toContain("export");
    // A stack through the package resolves to the TypeScript file and line.
    writeFileSync(
      join(app, "bad-schema.mjs"),
      `import { createPawl } from "pawl";\ntry { createPawl({ schema: "Bad" }); } catch (e) { console.log(e.stack); }\n`,
    );
    const r = await ok(process.execPath, ["--enable-source-maps", "bad-schema.mjs"], app);
    expect(r.stdout).toContain("invalid schema name");
    expect(r.stdout).toMatch(/src\/db\/schema-name\.ts:\d+/);
  });
});

describe("in a project with only pg", () => {
  it('runs a job through import { createPawl } from "pawl", and names the missing transport clients', async () => {
    writeFileSync(
      join(app, "run-job.mjs"),
      `import { createPawl, MissingDependencyError } from "pawl";
import { createCoordinator } from "pawl/coordinators";

const schema = process.argv[2];
const connectionString = process.env.DATABASE_URL;
const out = { missing: {} };
for (const spec of ["postgres", "amqp://127.0.0.1:5672", "hazelcast://127.0.0.1:5701?cluster=pawl"]) {
  try {
    await createCoordinator(spec, { nodeId: "pack", connectionString, schema });
    out.missing[spec] = "loaded";
  } catch (e) {
    out.missing[spec] = { code: e.code, message: e.message, typed: e instanceof MissingDependencyError };
  }
}
const refused = createPawl({ connectionString, schema, coordinator: "postgres" });
out.startWithPostgres = await refused.start().then(() => "started", (e) => e.code);
// close() after the refused start must not throw the start's error a second time.
out.closeAfterRefusedStart = await refused.close().then(() => "closed", (e) => e.code ?? String(e));

const pawl = createPawl({ connectionString, schema });
out.migrated = await pawl.migrate();
pawl.register("pack.double", async (payload) => ({ doubled: payload.n * 2 }));
const succeeded = new Promise((resolve) => pawl.on("job:succeeded", (e) => resolve(e.job.id)));
await pawl.start();
const job = await pawl.enqueue("pack.double", { n: 21 });
out.succeededId = await succeeded;
const done = await pawl.getJob(job.id);
out.job = { id: job.id, status: done.status, result: done.result };
await pawl.stop();
await pawl.close();
console.log(JSON.stringify(out));
`,
    );
    const before = await pawlBin("migrate", "--check", "--schema", schema, "--database-url", databaseUrl);
    expect(before.code).toBe(1);
    expect(before.stderr).toContain("pending migration");

    const run = await node("run-job.mjs", schema);
    const out = JSON.parse(run.stdout);
    // Only a connection string: the default coordinator (auto) finds no pg-listen here, says so on stderr
    // (the default logger), and the node runs by polling.
    expect(run.stderr).toContain("pg-listen is not installed");
    expect(run.stderr).toContain("npm install pg-listen");
    expect(out.missing).toEqual({
      postgres: expect.objectContaining({ code: "MISSING_DEPENDENCY", typed: true }),
      "amqp://127.0.0.1:5672": expect.objectContaining({ code: "MISSING_DEPENDENCY", typed: true }),
      "hazelcast://127.0.0.1:5701?cluster=pawl": expect.objectContaining({
        code: "MISSING_DEPENDENCY",
        typed: true,
      }),
    });
    expect(out.missing.postgres.message).toContain("npm install pg-listen");
    expect(out.missing["amqp://127.0.0.1:5672"].message).toContain("npm install amqplib");
    expect(out.missing["hazelcast://127.0.0.1:5701?cluster=pawl"].message).toContain(
      "npm install hazelcast-client",
    );
    expect(out.startWithPostgres).toBe("MISSING_DEPENDENCY");
    expect(out.closeAfterRefusedStart).toBe("closed");
    expect(out.migrated.applied.length).toBeGreaterThan(0);
    expect(out.job).toEqual({ id: out.succeededId, status: "SUCCEEDED", result: { doubled: 42 } });

    // The bin against the schema the job's node migrated: current now.
    const after = await pawlBin("migrate", "--check", "--schema", schema, "--database-url", databaseUrl);
    expect(after).toMatchObject({ code: 0, stderr: "" });
    expect(after.stdout).toContain(`schema ${schema} is up to date`);
  });

  it("runs the bin: npx pawl --version", async () => {
    const r = await ok("npx", ["--no-install", "pawl", "--version"], app);
    expect(r.stdout).toBe(`${repoPackage.version}\n`);
  });

  it("type-checks a consumer against the shipped declarations", async () => {
    writeFileSync(
      join(app, "consumer.ts"),
      `import { createPawl, PawlError, type JobContext } from "pawl";
import { createCoordinator, type Coordinator } from "pawl/coordinators";

const pawl = createPawl({ schema: "pawl", concurrency: 2 });
pawl.register("email.send", async (payload: { to: string }, ctx: JobContext) => {
  ctx.logger.info("sending", { to: payload.to, attempt: ctx.attempt });
  return { sent: true };
});
export const enqueued: Promise<{ id: string; inserted: boolean }> = pawl.enqueue("email.send", { to: "a@b.c" });
export const isPawlError = (e: unknown): boolean => e instanceof PawlError && e.code === "MISSING_DEPENDENCY";
export const coordinator: Promise<Coordinator> = createCoordinator("none", {
  nodeId: "n",
  connectionString: "postgres://x",
  schema: "pawl",
});
`,
    );
    writeFileSync(
      join(app, "wrong.ts"),
      `import { createPawl } from "pawl";\nexport const n: number = createPawl({ schema: "pawl" }).nodeId;\n`,
    );
    const tsconfig = (files: string[]) =>
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files,
      });
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    writeFileSync(join(app, "tsconfig.json"), tsconfig(["consumer.ts"]));
    await ok(process.execPath, [tsc, "-p", "tsconfig.json"], app);
    // The declarations are real types, not any: a wrong use is an error.
    writeFileSync(join(app, "tsconfig.wrong.json"), tsconfig(["wrong.ts"]));
    const wrong = await sh(process.execPath, [tsc, "-p", "tsconfig.wrong.json"], app);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout).toContain("TS2322");
  });

  it("names prom-client when createMetrics is called without it, then scrapes metrics once installed, and names @statelyai/inspect for the Stately bridge", async () => {
    writeFileSync(
      join(app, "metrics.mjs"),
      `import { createPawl } from "pawl";
const { createMetrics, connectStatelyInspector } = await import("pawl/observability");
const pawl = createPawl({ connectionString: process.env.DATABASE_URL, schema: process.argv[2] });
await pawl.migrate();
const metrics = createMetrics(pawl);
pawl.register("pack.metrics", async () => "ok");
const succeeded = new Promise((resolve) => pawl.on("job:succeeded", resolve));
await pawl.start();
await pawl.enqueue("pack.metrics", {});
await succeeded;
const text = await metrics.metrics();
metrics.close();
// The Stately bridge's package is not installed: connecting names it (stderr, so stdout stays the scrape).
const stately = await connectStatelyInspector(pawl).then(() => "connected", (e) => \`\${e.code} \${e.message}\`);
process.stderr.write(\`stately: \${stately}\\n\`);
await pawl.stop();
await pawl.close();
process.stdout.write(text);
`,
    );
    const without = await sh(process.execPath, ["metrics.mjs", schema], app);
    expect(without.code).not.toBe(0);
    expect(without.stderr).toContain("MissingDependencyError");
    expect(without.stderr).toContain("npm install prom-client");

    const prom = repoPackage.devDependencies["prom-client"];
    await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", `prom-client@${prom}`], app);
    const run = await node("metrics.mjs", schema);
    const text = run.stdout;
    expect(run.stderr).toContain(
      'stately: MISSING_DEPENDENCY the Stately inspector bridge (connectStatelyInspector) needs the package "@statelyai/inspect"',
    );
    expect(text).toContain("# TYPE pawl_jobs_started_total counter");
    expect(text).toMatch(/pawl_job_outcomes_total\{[^}]*type="pack\.metrics"[^}]*\} 1/);
  });
});

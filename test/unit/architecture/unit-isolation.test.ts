/**
 * `npm run test:unit` needs no services (issue 43: CONTRIBUTING said so while the unit run shared the
 * suite's global setup, which checks PostgreSQL and starts Hazelcast through Java). Kept true here: the
 * unit config has no global setup and takes only test/unit, the script uses it, and no unit test imports
 * a helper that opens a connection or starts a server. .ci/run also runs the unit tests with DATABASE_URL
 * pointing at no server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import unitConfig from "../../../vitest.unit.config.js";

const root = new URL("../../../", import.meta.url).pathname;

/** Helpers that reach a service: the test database, a node on it, the CLI on it, Hazelcast. */
const serviceHelpers = /from\s+["'][./]*\/helpers\/(db|pawl|cluster|cli|hazelcast|global-setup)(\.js)?["']/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

describe("the unit tests", () => {
  it("run under a config without a global setup, over test/unit only", () => {
    expect(unitConfig.test?.globalSetup ?? []).toEqual([]);
    expect(unitConfig.test?.include).toEqual(["test/unit/**/*.test.ts"]);
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts["test:unit"]).toBe("vitest run --config vitest.unit.config.ts");
  });

  it("import no helper that needs a service", () => {
    const self = new URL(import.meta.url).pathname;
    const offenders = files(join(root, "test/unit"))
      .filter((f) => f !== self && serviceHelpers.test(readFileSync(f, "utf8")))
      .map((f) => relative(root, f));
    expect(offenders).toEqual([]);
  });

  it("are told apart from one that does (the pattern bites)", () => {
    expect(serviceHelpers.test(`import { testPool } from "../../helpers/db.js";`)).toBe(true);
    expect(serviceHelpers.test(`import { newJob } from "../../helpers/new-job.js";`)).toBe(false);
  });
});

/**
 * Every connection pawl checks out of a pool goes through src/db/held-client.ts, the one place that
 * listens for the client's `error` while it is held: a `pool.connect()` anywhere else is a checkout that a
 * FATAL can turn into an uncaughtException in the host. Enforced here rather than as a lint rule, by
 * reading the sources of every shipped folder.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const allowed = new Set(["src/db/held-client.ts"]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|js|mts)$/.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** A `.connect(` called on something named like a pool (`pool`, `this.pool`, `deps.pool`, `jobPool`, ...). */
const poolCheckout = /\b\w*pool\w*\s*(\)\s*)?\.\s*connect\s*\(/gi;

describe("connection checkouts", () => {
  it("happen only in src/db/held-client.ts", () => {
    const offenders: string[] = [];
    for (const folder of ["src", "coordinators", "observability"]) {
      for (const file of sources(join(root, folder))) {
        const rel = relative(root, file).split("\\").join("/");
        if (allowed.has(rel)) continue;
        const lines = readFileSync(file, "utf8").split("\n");
        lines.forEach((line, i) => {
          if (poolCheckout.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
          poolCheckout.lastIndex = 0;
        });
      }
    }
    expect(offenders).toEqual([]);
  });

  it("the pattern catches the shapes a checkout takes", () => {
    const shapes = [
      "const c = await pool.connect();",
      "await this.pool.connect()",
      "(deps.jobPool).connect()",
    ];
    for (const s of shapes) {
      expect(s, s).toMatch(poolCheckout);
      poolCheckout.lastIndex = 0;
    }
    expect("await subscriber.connect();").not.toMatch(poolCheckout);
  });
});

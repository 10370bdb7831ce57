/**
 * The docs' drift checks (issue 43), each the check that would have caught one drift:
 *
 * - every event of the typed event map (src/core/events.ts's `PawlEvents`, read with the TypeScript
 *   compiler) is listed in the events table of docs/guide/handlers.md (`database:connection-error` was not);
 * - every option the SQL `enqueue()` accepts (its `known` list in the newest migration that defines it) is
 *   documented in docs/sql-enqueue.md's options table (`concurrencyKey` was not);
 * - check-docs's extraction and isolation rules, on planted markdown (scripts/check-docs.ts; CI runs it
 *   over the real docs with `npm run check:docs`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { extractBlocks, unknownNames } from "../../../scripts/check-docs.js";

const root = new URL("../../../", import.meta.url).pathname;
const read = (path: string) => readFileSync(join(root, path), "utf8");

/** The property names of an interface declared in a source file. */
function interfaceKeys(path: string, name: string): string[] {
  const source = ts.createSourceFile(path, read(path), ts.ScriptTarget.Latest, true);
  const keys: string[] = [];
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      for (const m of node.members) {
        if (m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) keys.push(m.name.text);
      }
    }
  });
  return keys;
}

/** The backticked names in the first column of the markdown table that follows `heading`. */
function tableNames(markdown: string, heading: RegExp): Set<string> {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => heading.test(l));
  const names = new Set<string>();
  if (start === -1) return names;
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith("|")) {
      inTable = true;
      const first = line.split("|")[1] ?? "";
      for (const m of first.matchAll(/`([^`]+)`/g)) names.add(m[1]!);
    } else if (inTable) break;
  }
  return names;
}

describe("the events table", () => {
  it("lists every event of the typed event map", () => {
    const events = interfaceKeys("src/core/events.ts", "PawlEvents");
    expect(events.length).toBeGreaterThan(30);
    expect(events).toContain("database:connection-error");
    const listed = tableNames(read("docs/guide/handlers.md"), /^## Events/);
    expect(events.filter((e) => !listed.has(e))).toEqual([]);
    expect([...listed].filter((e) => !events.includes(e))).toEqual([]);
  });
});

describe("the SQL enqueue options", () => {
  it("are all documented in docs/sql-enqueue.md", () => {
    // The newest migration that (re)defines enqueue() holds the list the function checks.
    const migrations = readdirSync(join(root, "migrations"))
      .filter((f) => f.endsWith(".sql"))
      .sort()
      .map((f) => read(join("migrations", f)))
      .filter((sql) => /known constant text\[\] := ARRAY\[/.test(sql));
    const newest = migrations.at(-1)!;
    const known = [
      .../known constant text\[\] := ARRAY\[([^\]]*)\]/.exec(newest)![1]!.matchAll(/'([^']+)'/g),
    ].map((m) => m[1]!);
    expect(known).toContain("concurrencyKey");
    const documented = tableNames(read("docs/sql-enqueue.md"), /^\| Option/);
    expect(known.filter((k) => !documented.has(k))).toEqual([]);
  });
});

describe("check-docs", () => {
  it("extracts ts and typescript blocks, indented ones too, with their check-docs declarations", () => {
    const md = [
      "# T",
      "```ts",
      "pawl.start();",
      "```",
      "- a list item:",
      "  <!-- check-docs: declare const x: number; -->",
      "  ```typescript",
      "  x.toFixed();",
      "  ```",
      "```ts no-check",
      "fragment(",
      "```",
      "```sh",
      "npm start",
      "```",
    ].join("\n");
    expect(extractBlocks("t.md", md)).toEqual([
      { file: "t.md", line: 3, code: "pawl.start();", given: "", skipped: false },
      { file: "t.md", line: 8, code: "x.toFixed();", given: "declare const x: number;", skipped: false },
      { file: "t.md", line: 11, code: "fragment(", given: "", skipped: true },
    ]);
  });
});

describe("the prose's names", () => {
  const known = new Set(["pauseJobType", "pauseQueue", "claimCursorDiscoveryMs"]);
  it("reports a method the code no longer has, bare or on pawl, outside code blocks only", () => {
    const text = [
      "`pauseQueue` / `pauseType`, and `pawl.pauseJobType(name)`, `claimCursorDiscoveryMs`, `SELECT 1`",
      "```ts",
      "pawl.pauseType; // a code block is check-docs's compile step's business",
      "```",
      "`boss.sendAfter()` and `pawl.unpauseAll()`",
    ].join("\n");
    expect(unknownNames([{ file: "d.md", text }], known)).toEqual([
      "d.md:1: `pauseType` names nothing in pawl's code (renamed? removed?)",
      "d.md:5: `pawl.unpauseAll()` names nothing in pawl's code (renamed? removed?)",
    ]);
  });
});

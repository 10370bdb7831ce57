/**
 * `npm run check:docs`: every TypeScript block of README.md and docs/**\/*.md, type-checked against the
 * package as a user imports it (issue 43: the docs had drifted from the code, `pauseType` for
 * `pauseJobType`, with nothing to notice).
 *
 * Each ```ts (or ```typescript) block becomes a module of its own in .scratch/check-docs/, compiled with
 * the project's compiler options; `pawl`, `pawl/testing`... resolve to the sources of the entries
 * package.json exports, so a renamed or removed export fails here. Top-level `await` works (the blocks
 * are ES modules), and every block's unused names are allowed.
 *
 * Blocks show a call, not a whole program, so a block may use the names the docs take as given without
 * declaring them: `pawl` (a started node), `client` (a bare client), `pool` (a pg.Pool) and `job` (an
 * enqueued job), declared by {@link prelude}. What else a block takes as given (the application's own
 * `sendMail`, a test runner's `it`) is declared in an HTML comment right above its fence, which the
 * rendered page does not show: `<!-- check-docs: declare function sendMail(to: string): Promise<void>; -->`.
 * A block that augments pawl's task map (`declare module "pawl"`) is compiled alone, so its job types do
 * not leak into the other blocks. A block that is deliberately a fragment (a signature, an excerpt of a
 * larger file) is marked ```ts no-check, and is the only kind skipped; use it sparingly.
 *
 * Errors are printed as `file.md:line: message`, pointing into the markdown; the exit code is 1 when any
 * block fails. `--keep` leaves the generated project for a look.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const root = new URL("../", import.meta.url).pathname;
const outDir = join(root, ".scratch", "check-docs");

/** One TypeScript block of a markdown file. */
export interface DocBlock {
  /** The markdown file, relative to the repository. */
  file: string;
  /** The 1-based line of the block's first line of code. */
  line: number;
  code: string;
  /** The declarations of the `<!-- check-docs: ... -->` comment above the block ("" when none). */
  given: string;
  /** Marked `no-check`. */
  skipped: boolean;
}

/**
 * The TypeScript blocks of a markdown text: fenced with ```ts or ```typescript (indented fences too, as
 * in a list), with `no-check` after the language marking a skipped one.
 */
export function extractBlocks(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)\b(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, , info] = open as unknown as [string, string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[j]!);
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length) break;
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!);
    }
    blocks.push({
      file,
      line: i + 2,
      code: body.join("\n"),
      given: givenAbove(lines, i),
      skipped: /\bno-check\b/.test(info),
    });
    i = j;
  }
  return blocks;
}

/** The code of a `<!-- check-docs: ... -->` comment ending on the line above `fence` (one or more lines). */
function givenAbove(lines: readonly string[], fence: number): string {
  let end = fence - 1;
  while (end >= 0 && lines[end]!.trim() === "") end--;
  if (end < 0 || !lines[end]!.trimEnd().endsWith("-->")) return "";
  let start = end;
  while (start >= 0 && !lines[start]!.includes("<!--")) start--;
  if (start < 0) return "";
  const text = lines.slice(start, end + 1).join("\n");
  const m = /<!--\s*check-docs:([\s\S]*)-->\s*$/.exec(text.trim());
  return m ? m[1]!.trim() : "";
}

/** The names a block may use undeclared (see the file header). Appended names must not clash with imports. */
export const prelude = `import type { Pawl as __Pawl, PawlClient as __PawlClient, Job as __Job } from "pawl";
import type __pg from "pg";
declare global {
  /** A started node, as the docs' snippets take it. */
  var pawl: __Pawl;
  /** A bare client (a web process). */
  var client: __PawlClient;
  /** The application's own pg pool. */
  var pool: __pg.Pool;
  /** An enqueued job. */
  var job: __Job;
}
export {};
`;

/** The source of each package entry, from package.json's exports (dist/x.d.ts -> x.ts). */
export function entryPaths(pkg: {
  name: string;
  exports: Record<string, unknown>;
}): Record<string, string[]> {
  const paths: Record<string, string[]> = {};
  for (const [key, target] of Object.entries(pkg.exports)) {
    const types =
      typeof target === "object" && target !== null ? (target as { types?: unknown }).types : undefined;
    if (typeof types !== "string") continue;
    const source = types.replace(/^\.\/dist\//, "./").replace(/\.d\.ts$/, ".ts");
    paths[key === "." ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, "")}`] = [join(root, source)];
  }
  return paths;
}

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".md") ? [join(dir, e.name)] : [],
    );
  return ["README.md", ...walk("docs")];
}

/** Type-checks `blocks`; returns the errors as `file.md:line: message`. */
export function checkBlocks(blocks: readonly DocBlock[]): string[] {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const where = new Map<string, { block: DocBlock; offset: number }>();
  const preludePath = join(outDir, "prelude.ts");
  writeFileSync(preludePath, prelude);
  const shared: string[] = [];
  const alone: string[][] = [];
  blocks.forEach((b, i) => {
    if (b.skipped) return;
    const path = join(outDir, `block-${String(i).padStart(3, "0")}.ts`);
    // `export {}` makes every block a module: its names are its own, and top-level await is allowed.
    const given = b.given === "" ? "" : `${b.given}\n`;
    writeFileSync(path, `${given}${b.code}\nexport {};\n`);
    where.set(path, { block: b, offset: given === "" ? 0 : given.split("\n").length - 1 });
    if (/declare\s+module\s+["']pawl["']/.test(b.code)) alone.push([preludePath, path]);
    else shared.push(path);
  });
  const errors: string[] = [];
  for (const files of [[preludePath, ...shared], ...alone]) errors.push(...compile(files, where));
  return errors;
}

function compile(files: string[], where: ReadonlyMap<string, { block: DocBlock; offset: number }>): string[] {
  const config = ts.readConfigFile(join(root, "tsconfig.json"), (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, unknown>;
  };
  const program = ts.createProgram(files, {
    ...parsed.options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    noUnusedLocals: false,
    noUnusedParameters: false,
    paths: entryPaths(pkg),
  });
  const errors: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    const at = d.file ? where.get(d.file.fileName) : undefined;
    if (d.file && at && d.start !== undefined) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const inBlock = line - at.offset;
      errors.push(
        inBlock < 0
          ? `${at.block.file}:${at.block.line - 1} (its check-docs comment): ${message}`
          : `${at.block.file}:${at.block.line + inBlock}: ${message}`,
      );
    } else if (d.file) {
      errors.push(`${relative(root, d.file.fileName)}: ${message}`);
    } else {
      errors.push(message);
    }
  }
  return errors;
}

/**
 * Names of other libraries the docs cite in inline code (profiles in benchmarks.md), which the name check
 * below cannot find in pawl's tree.
 */
const foreignNames = new Set([
  "getTransitionDomain", // xstate
  "selectEventlessTransitions", // xstate
  "createMachineSnapshot", // xstate
  "parseRow", // pg
  "parseDate", // pg (postgres-date)
]);

/**
 * The prose's half of the check: a camelCase name in inline code outside the code blocks (`pauseJobType`,
 * `pawl.pauseJobType(...)`, `claimCursorDiscoveryMs`) must occur somewhere in pawl's own code (sources,
 * migrations, examples, bin). A method or option renamed in the code and not in the prose is
 * then reported: `pauseType` was. Names of other libraries are written with their object
 * (`boss.send()`, `workerUtils.addJob()`), which this check leaves alone, or listed in {@link foreignNames}.
 */
export function unknownNames(
  files: readonly { file: string; text: string }[],
  known: ReadonlySet<string>,
): string[] {
  const errors: string[] = [];
  for (const { file, text } of files) {
    let fence: string | null = null;
    text.split("\n").forEach((line, i) => {
      const open = /^\s*(`{3,}|~{3,})/.exec(line);
      if (open) {
        if (fence === null) fence = open[1]!;
        else if (open[1]![0] === fence[0] && /^\s*(`{3,}|~{3,})\s*$/.test(line)) fence = null;
        return;
      }
      if (fence !== null) return;
      for (const [, span] of line.matchAll(/`([^`]+)`/g)) {
        const m = /^(?:pawl\.)?([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)(\(.*\))?$/.exec(span!);
        if (m && !known.has(m[1]!) && !foreignNames.has(m[1]!)) {
          errors.push(`${file}:${i + 1}: \`${span}\` names nothing in pawl's code (renamed? removed?)`);
        }
      }
    });
  }
  return errors;
}

/** Every identifier in pawl's own tree. */
function knownNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.(ts|js|cjs|sql)$/.test(e.name)) {
        for (const w of readFileSync(join(root, path), "utf8").match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])
          names.add(w);
      }
    }
  };
  for (const dir of [
    "src",
    "coordinators",
    "observability",
    "migrations",
    "scripts",
    "test",
    "examples",
    "bin",
  ])
    walk(dir);
  return names;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const texts = markdownFiles().map((file) => ({ file, text: readFileSync(join(root, file), "utf8") }));
  const blocks = texts.flatMap(({ file, text }) => extractBlocks(file, text));
  const errors = [...unknownNames(texts, knownNames()), ...checkBlocks(blocks)];
  if (!process.argv.includes("--keep")) rmSync(outDir, { recursive: true, force: true });
  const checked = blocks.filter((b) => !b.skipped).length;
  for (const e of errors) console.error(e);
  console.error(
    `check:docs: ${checked} TypeScript blocks checked, ${blocks.length - checked} marked no-check, ${errors.length} errors`,
  );
  process.exit(errors.length === 0 ? 0 : 1);
}

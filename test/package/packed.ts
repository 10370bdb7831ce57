/**
 * The published package as the package tests get it: `npm pack` of this checkout into a temporary folder,
 * and commands run in projects that install the tarball. The build is shared: when dist/ is older than its
 * inputs, one file rebuilds it under a lock while the others wait, so two files packing in parallel never
 * delete each other's dist/ (the build starts by removing it).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { databaseUrl } from "../helpers/db.js";

const exec = promisify(execFile);

/** The repository root. */
export const root = new URL("../../", import.meta.url).pathname;

/** The repository's package.json. */
export const repoPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  version: string;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/**
 * The environment of every command: npm_* variables from an outer `npm test` (prefix, cache, lifecycle
 * event) must not steer the inner npm; DATABASE_URL is the test database.
 */
export const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_")),
) as NodeJS.ProcessEnv;
env.DATABASE_URL = databaseUrl;

/** A command's exit code and output. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; resolves with its exit code and output instead of throwing on a non-zero exit. */
export async function sh(file: string, args: string[], cwd: string, timeout = 120_000): Promise<Ran> {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd, env, timeout, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string; message: string };
    if (typeof e.code !== "number") throw error;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? e.message };
  }
}

/** Like {@link sh}, but a non-zero exit fails with the command's output. */
export async function ok(file: string, args: string[], cwd: string, timeout?: number): Promise<Ran> {
  const r = await sh(file, args, cwd, timeout);
  if (r.code !== 0) throw new Error(`${file} ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The newest modification time of the files under `path` (recursively), or of `path` if it is a file. */
function newest(path: string): number {
  if (!statSync(path).isDirectory()) return statSync(path).mtimeMs;
  return Math.max(
    0,
    ...readdirSync(path, { recursive: true, encoding: "utf8" }).map((f) => statSync(join(path, f)).mtimeMs),
  );
}

/**
 * Whether dist was built after every input of the build changed. CI's `npm ci` has just run `prepare`, so
 * there the pack skips a second build (the slowest step by far); anywhere else a stale dist is rebuilt.
 */
function distIsFresh(): boolean {
  const built = join(root, "dist/src/index.js");
  if (!existsSync(built)) return false;
  const inputs = [
    "src",
    "coordinators",
    "observability",
    "migrations",
    "tsconfig.json",
    "tsconfig.build.json",
  ];
  return inputs.every((p) => newest(join(root, p)) <= statSync(built).mtimeMs);
}

/** Builds dist/ unless it is fresh, one builder at a time (a lock folder beside it). */
async function buildOnce(): Promise<void> {
  const lock = join(root, ".pack-build.lock");
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than any build is left by a run that was killed mid-build: take it over.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 300_000)
        rmSync(lock, { recursive: true, force: true });
      // Another file is building: wait for its lock to go, polling the file system (nothing to await).
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!distIsFresh()) await ok("npm", ["run", "build"], root, 240_000);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** What `npm pack --json` reports of one tarball. */
export interface Packed {
  filename: string;
  files: { path: string }[];
  size: number;
  unpackedSize: number;
}

/** Packs this checkout into `destination` (built first when dist/ is stale) and returns npm's report. */
export async function packTarball(destination: string): Promise<Packed> {
  await buildOnce();
  // `prepare` (the build) has just run or was not needed: the pack itself builds nothing.
  const pack = await ok(
    "npm",
    ["pack", "--json", "--ignore-scripts", "--pack-destination", destination],
    root,
  );
  // Lifecycle output can precede the JSON report; the report is the last top-level array.
  return (JSON.parse(pack.stdout.slice(pack.stdout.lastIndexOf("\n[") + 1)) as Packed[])[0]!;
}

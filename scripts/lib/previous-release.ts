/**
 * The previous release's tree (scripts/previous-release.txt), taken from git history: the rolling-upgrade
 * test runs its node beside this tree's, and the fairness bench measures its throughput beside this tree's
 * in the same run ("jobs without a key at today's speed"). `git archive` into a temp directory with this
 * checkout's node_modules linked in; kept between runs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is in scripts/lib/). */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The previous release's commit: the first line of scripts/previous-release.txt. */
export function previousRelease(): string {
  return readFileSync(join(repoRoot, "scripts", "previous-release.txt"), "utf8")
    .split("\n")[0]!
    .trim();
}

/**
 * The previous release's source tree, extracted from git history on first use.
 *
 * @throws Error when the commit is not in this clone's history (a shallow clone), saying how to fetch it.
 */
export function previousTree(): string {
  const previous = previousRelease();
  const dir = join(tmpdir(), `pawl-release-${previous}`);
  if (!existsSync(join(dir, "package.json"))) {
    let archive: Buffer;
    try {
      archive = execFileSync("git", ["archive", "--format=tar", previous], {
        cwd: repoRoot,
        maxBuffer: 1 << 30,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      throw new Error(
        `the previous release ${previous} (scripts/previous-release.txt) is not in this clone's history; ` +
          `fetch it (git fetch --unshallow, or a CI checkout with full history): ${String(error)}`,
      );
    }
    // Extracted beside and renamed into place, so an interrupted extraction is never taken for a tree.
    const partial = `${dir}.partial-${process.pid}`;
    mkdirSync(partial, { recursive: true });
    execFileSync("tar", ["-x", "-C", partial], { input: archive });
    try {
      renameSync(partial, dir);
    } catch (error) {
      // Another run extracted it meanwhile: use theirs.
      if (!existsSync(join(dir, "package.json"))) throw error;
      rmSync(partial, { recursive: true, force: true });
    }
  }
  if (!existsSync(join(dir, "node_modules")))
    symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  return dir;
}

/**
 * The previous release's tree (scripts/previous-release.txt), taken from git history: the rolling-upgrade
 * test runs its node beside this tree's, and the fairness bench measures its throughput beside this tree's
 * in the same run ("jobs without a key at today's speed"). `git archive` into a temp directory with this
 * checkout's node_modules linked in; kept between runs, one directory per release and checkout (a tree
 * shared between checkouts would link one checkout's node_modules, and dangle once that one is deleted).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from "node:fs";
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
  const checkout = createHash("sha256").update(repoRoot).digest("hex").slice(0, 12);
  const dir = join(tmpdir(), `pawl-release-${previous}-${checkout}`);
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
  linkNodeModules(dir);
  return dir;
}

/**
 * Points `dir`/node_modules at this checkout's, unless it already does. The new link is made beside and
 * renamed over the old one, so a concurrent caller never sees the tree without it.
 */
function linkNodeModules(dir: string): void {
  const link = join(dir, "node_modules");
  const target = join(repoRoot, "node_modules");
  if (readLink(link) === target) return;
  const fresh = `${link}.link-${process.pid}`;
  rmSync(fresh, { force: true });
  symlinkSync(target, fresh);
  renameSync(fresh, link);
}

/** Where a symlink points, or null when there is none. */
function readLink(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

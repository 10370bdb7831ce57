/**
 * The package's version for `pawl --version`, read from pawl's own package.json. The CLI runs from
 * src/cli (tsx, tests) or dist/src/cli (the bin), so the file is found by walking up to the package.json
 * named `pawl` rather than by a fixed relative path.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The version in pawl's package.json, or `"unknown"` when it cannot be found (a bundled CLI).
 *
 * @example
 * ```ts
 * packageVersion(); // "0.3.0-dev.0"
 * ```
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
      if (pkg.name === "pawl" && typeof pkg.version === "string") return pkg.version;
    }
    dir = dirname(dir);
  }
  return "unknown";
}

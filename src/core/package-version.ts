/**
 * pawl's version, read from its own package.json. The code runs from src/ (tsx, tests), dist/src/ (the
 * package) or a bundle, so the file is found by walking up to the package.json named `pawl` rather than by
 * a fixed relative path. A bundle usually has none above it: the version is then `"unknown"`.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { moduleLocation } from "./module-location.js";

let cached: string | undefined;

/**
 * The version in pawl's package.json, or `"unknown"` when it cannot be found (a bundle). Read once.
 *
 * @example
 * ```ts
 * packageVersion(); // "0.3.0-dev.0"
 * ```
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  cached = "unknown";
  let dir = dirname(fileURLToPath(moduleLocation()));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (pkg.name === "pawl" && typeof pkg.version === "string") {
          cached = pkg.version;
          break;
        }
      } catch {
        // An unreadable package.json further up is not ours; keep looking.
      }
    }
    dir = dirname(dir);
  }
  return cached;
}

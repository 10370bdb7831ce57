/**
 * The system's Chromium for the browser test and the console page-load script: where it is, and the one
 * way both launch it. Debian's `chromium` package driven by playwright-core (no browser download works
 * here), headless with the flags a container without a GPU, a sandbox or a network needs.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** The flags every pawl browser run passes: no sandbox, GPU, first-run UI or background traffic. */
export const chromiumArgs: readonly string[] = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The system's chromium: `$PAWL_CHROMIUM` when it exists, else the first of the usual names on PATH. */
export function findChromium(): string | null {
  const given = process.env.PAWL_CHROMIUM;
  if (given && existsSync(given)) return given;
  for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
    try {
      const found = execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
      if (found) return found;
    } catch {
      // not this one
    }
  }
  return null;
}

/** Launches `executablePath` headless with {@link chromiumArgs}. */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: [...chromiumArgs] });
}

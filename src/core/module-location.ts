/**
 * Where pawl's code runs from, for the few places that find something relative to the package: its
 * package.json (the version) and the optional peers it loads by name (prom-client, ws). This is the one file
 * of pawl that reads `import.meta`: a CommonJS bundle (esbuild `--format=cjs`) leaves `import.meta` empty,
 * and a `fileURLToPath(import.meta.url)` there throws inside `start()`, so every use goes through here.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * This module's file URL: `import.meta.url` in ESM (the package, tsx, an ESM bundle); in a CommonJS bundle
 * the bundle's own file (`__filename`); with neither, a file in the working directory, where an
 * application's node_modules usually is.
 */
export function moduleLocation(): string {
  const url = (import.meta as Partial<ImportMeta>).url;
  if (typeof url === "string") return url;
  // `typeof` of an undeclared name is "undefined", so this is safe in ESM, where __filename does not exist.
  if (typeof __filename === "string") return pathToFileURL(__filename).href;
  return pathToFileURL(join(process.cwd(), "index.js")).href;
}

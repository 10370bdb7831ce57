/* global performance, setTimeout, URL */
/**
 * What importing one entry of pawl costs a process: the time the import takes and the modules it loads
 * (ESM through a loader hook, CommonJS from require.cache), and whether xstate or the node's runtime is
 * among them. docs/guide/client.md quotes its numbers for `pawl/client` against `pawl`, and
 * test/package/module-formats.test.ts runs it in an installed copy of the package.
 *
 *   node scripts/import-footprint.mjs ./dist/src/client/index.js     # a file, from the working directory
 *   node import-footprint.mjs pawl/client                             # a package name, from beside this file
 *
 * Run each entry in a fresh process, and several times: the first run of a process pays the disk cache.
 */
import { createRequire, register } from "node:module";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel } from "node:worker_threads";

const specifier = process.argv[2];
if (!specifier) {
  console.error("usage: node import-footprint.mjs <specifier or path>");
  process.exit(2);
}
const target =
  specifier.startsWith(".") || isAbsolute(specifier) ? pathToFileURL(resolve(specifier)).href : specifier;

// Every ESM module Node loads passes through this hook, which posts its URL back to this thread.
const hooks = `let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) { port.postMessage(url); return next(url, context); }`;
const { port1, port2 } = new MessageChannel();
const esm = [];
port1.on("message", (url) => esm.push(url));
port1.unref();
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url, {
  data: { port: port2 },
  transferList: [port2],
});

const started = performance.now();
await import(target);
const ms = performance.now() - started;
// The hook thread posts asynchronously: let its last messages arrive.
await new Promise((r) => setTimeout(r, 100));

const files = esm.filter((u) => u.startsWith("file:")).map((u) => new URL(u).pathname);
const cjs = Object.keys(createRequire(import.meta.url).cache);
const all = [...files, ...cjs].filter((f) => !f.endsWith("import-footprint.mjs"));
const packageOf = (f) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1] ?? null;
const ours = all.filter((f) => packageOf(f) === "pawl" || (packageOf(f) === null && /\/dist\//.test(f)));
console.log(
  JSON.stringify({
    specifier,
    ms: Math.round(ms),
    modules: all.length,
    pawlModules: ours.length,
    packages: [...new Set(all.map(packageOf).filter((p) => p !== null && p !== "pawl"))].sort(),
    runtimeModules: ours.filter((f) => /\/dist\/src\/(node|machines|cluster)\//.test(f)).length,
  }),
);

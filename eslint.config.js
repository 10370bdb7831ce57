import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Which packages each part of the tree may load. The order of pawl's own layers (and the ban on import
// cycles) is checked by dependency-cruiser (.dependency-cruiser.cjs, `npm run check:layers`); these rules
// cover what it does not: purity (no I/O, no xstate in logic), and which folders may hold a transport
// client. The patterns are matched against the import specifier.
const transportClients = ["pg-listen", "amqplib", "hazelcast-client", "prom-client"];
const layer = (regex, message) => ({ regex, message });
const restrict = (files, patterns, paths = []) => ({
  files,
  rules: { "no-restricted-imports": ["error", { patterns, paths }] },
});
const clientPaths = (why) => transportClients.map((name) => ({ name, message: why }));

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".hazelcast/**", "coverage/**", ".prof/**", ".ci/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs", globals: { module: "writable" } } },
  // Later entries win for the files they match, so the general rule comes first and the stricter ones
  // (which repeat the transport clients) after it.
  restrict(
    ["src/**/*.ts"],
    [],
    clientPaths("the core holds no transport client: coordinators/ and observability/ do"),
  ),
  restrict(
    ["src/logic/**/*.ts"],
    [layer("^node:", "logic is pure: no I/O")],
    [
      { name: "xstate", message: "logic is pure: no xstate" },
      { name: "pg", message: "logic is pure: no I/O" },
      ...clientPaths("logic is pure: no I/O"),
    ],
  ),
  restrict(
    ["src/machines/**/*.ts"],
    [],
    [{ name: "pg", message: "machines do no I/O" }, ...clientPaths("machines do no I/O")],
  ),
  // @opentelemetry/api is an optional peer: only src/tracing/otel-api.ts loads it (dynamically, so a
  // missing package means no tracing); everything else may import its types only.
  {
    files: ["src/**/*.ts", "coordinators/**/*.ts", "observability/**/*.ts"],
    ignores: ["src/tracing/otel-api.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "@opentelemetry/api",
              message: "load the API through src/tracing/otel-api.ts (an optional peer); import types only",
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  // A CommonJS bundle (esbuild --format=cjs) leaves import.meta empty; the package reads it in one place,
  // which falls back safely (src/core/module-location.ts).
  {
    files: ["src/**/*.ts", "coordinators/**/*.ts", "observability/**/*.ts"],
    ignores: ["src/core/module-location.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "MetaProperty[meta.name='import']",
          message:
            "import.meta is empty in a CommonJS bundle: use moduleLocation() (src/core/module-location.ts)",
        },
      ],
    },
  },
  ...["postgres", "amqp", "hazelcast", "in-memory", "none"].map((name) =>
    restrict(
      [`coordinators/${name}/**/*.ts`],
      [
        layer(
          `(^|/)(postgres|amqp|hazelcast|in-memory|none)/`.replace(`${name}|`, "").replace(`|${name}`, ""),
          "no transport imports another",
        ),
      ],
    ),
  ),
);

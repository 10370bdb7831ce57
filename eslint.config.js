import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The layering (docs/architecture.md#layers). Each entry restricts what one folder may import; the
// patterns are matched against the import specifier, so `regex` covers relative paths of any depth.
const transportClients = ["pg-listen", "amqplib", "hazelcast-client", "prom-client"];
const layer = (regex, message) => ({ regex, message });
const toObservability = layer(
  "(^|/)observability/",
  "the core never imports observability (it subscribes to events)",
);
const toTransport = layer(
  "(^|/)coordinators/(postgres|amqp|hazelcast|in-memory|none)/",
  "the core talks to coordinators through the SPI only",
);
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
  restrict(
    ["src/logic/**/*.ts"],
    [
      layer("^node:", "logic is pure: no I/O"),
      layer(
        "(^|/)(machines|runtime|store|composition|cluster|cli|testing|embedded)/|(^|/)(client|pawl|node-hooks|config)\\.js$",
        "logic is pure: it imports no layer that does I/O",
      ),
    ],
    [
      { name: "xstate", message: "logic is pure: no xstate" },
      { name: "pg", message: "logic is pure: no I/O" },
      ...clientPaths("logic is pure: no I/O"),
    ],
  ),
  restrict(
    ["src/machines/**/*.ts"],
    [
      toObservability,
      toTransport,
      layer(
        "(^|/)(runtime|store|composition|cluster|cli|testing)/",
        "machines describe structure; effects are supplied",
      ),
    ],
    [{ name: "pg", message: "machines do no I/O" }, ...clientPaths("machines do no I/O")],
  ),
  restrict(
    ["src/runtime/**/*.ts"],
    [toObservability, toTransport],
    clientPaths("the runtime never holds a transport client"),
  ),
  restrict(
    ["src/store/**/*.ts"],
    [
      toObservability,
      toTransport,
      layer(
        "(^|/)(machines|runtime|composition|cluster|cli|testing)/",
        "the store knows SQL, not the layers above it",
      ),
    ],
    clientPaths("the store holds no transport client"),
  ),
  restrict(
    ["src/composition/**/*.ts"],
    [
      toObservability,
      toTransport,
      layer("(^|/)(runtime|machines)/", "composition never reaches into the runtime"),
    ],
    clientPaths("composition holds no transport client"),
  ),
  restrict(
    ["src/cluster/**/*.ts", "src/*.ts"],
    [toObservability, toTransport],
    clientPaths("the core holds no transport client"),
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
  ...["postgres", "amqp", "hazelcast", "in-memory", "none"].map((name) =>
    restrict(
      [`coordinators/${name}/**/*.ts`],
      [
        layer(
          `(^|/)(postgres|amqp|hazelcast|in-memory|none)/`.replace(`${name}|`, "").replace(`|${name}`, ""),
          "no transport imports another",
        ),
        layer("(^|/)src/(runtime|machines|composition|cluster)/", "a transport knows the SPI, not the node"),
      ],
    ),
  ),
);

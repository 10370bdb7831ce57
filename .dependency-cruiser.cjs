/**
 * pawl's layers, bottom to top, and the checks CI runs on them (`npm run check:layers`): a module may import
 * from its own layer and the layers below it, never from one above it or from a sibling on the same rung, and
 * no import cycle may exist anywhere, type-only imports included. docs/architecture.md#layers draws this list.
 */
const layers = [
  {
    name: "core",
    path: "^src/core/|^coordinators/spi\\.ts$",
    why: "errors, clock, logger, events, job types and the coordinator SPI: import nothing of pawl",
  },
  { name: "logic", path: "^src/logic/", why: "pure decisions" },
  { name: "machines", path: "^src/machines/", why: "xstate machines: structure, effects supplied" },
  { name: "coordinators", path: "^coordinators/(?!spi\\.ts$)", why: "wakeup transports behind the SPI" },
  { name: "db", path: "^src/db/", why: "connections: pool, held client, embedded database, SQL helpers" },
  { name: "input", path: "^src/input/", why: "validation of everything that comes from outside" },
  { name: "tracing", path: "^src/tracing/", why: "OpenTelemetry plumbing" },
  { name: "store", path: "^src/store/", why: "SQL, by what it owns" },
  { name: "composition", path: "^src/composition/", why: "flows, signals, pauses" },
  { name: "node", path: "^src/node/", why: "the node's runtime: lanes, attempts, outcome writes" },
  { name: "cluster", path: "^src/cluster/", why: "background services" },
  { name: "api", path: "^src/api/", why: "createPawl, the client, hooks, waitFor" },
  {
    name: "entry",
    path: "^src/index\\.ts$|^src/client/index\\.ts$",
    why: "the public API: pawl and pawl/client",
  },
  [
    { name: "cli", path: "^src/cli/", why: "the pawl command" },
    { name: "testing", path: "^src/testing/", why: "pawl/testing" },
  ],
  { name: "observability", path: "^observability/", why: "metrics, inspection and the console" },
];

const rungs = layers.map((rung) => (Array.isArray(rung) ? rung : [rung]));
const upward = rungs.flatMap((rung, i) =>
  rung.map((layer) => {
    const above = rungs.slice(i + 1).flat();
    const siblings = rung.filter((other) => other !== layer);
    return {
      name: `layer-${layer.name}`,
      comment: `${layer.name} (${layer.why}) imports only from the layers below it: ${
        rungs
          .slice(0, i)
          .flat()
          .map((l) => l.name)
          .join(", ") || "none"
      }`,
      severity: "error",
      from: { path: layer.path },
      to: { path: [...above, ...siblings].map((l) => l.path).join("|") || "^$" },
    };
  }),
);

module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "no import cycle, type-only imports included",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...upward,
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
  },
};

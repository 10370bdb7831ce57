import { defineConfig } from "vitest/config";

/**
 * `npm run test:unit`: the unit tests alone, with no services. The full suite's config (vitest.config.ts)
 * has a global setup that checks PostgreSQL and starts a Hazelcast member through Java; this one has
 * none, so a machine without either runs the unit tests. test/unit/architecture/unit-isolation.test.ts
 * keeps them that way.
 */
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    testTimeout: 30_000,
    maxWorkers: 2,
    reporters: ["default"],
  },
});

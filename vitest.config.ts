import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration files each get their own schema, so files may run in parallel; two workers fit 2 cores.
    maxWorkers: 2,
    reporters: ["default"],
  },
});

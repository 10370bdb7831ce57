import { describe, expect, it } from "vitest";
import {
  clusterOptionKeys,
  defaultClusterOptions,
  resolveClusterOptions,
} from "../../../src/input/cluster-options.js";
import { ValidationError } from "../../../src/core/errors.js";
import { resolveConfig } from "../../../src/input/config.js";
import { resolveRuntimeOptions } from "../../../src/input/runtime-config.js";

describe("resolveClusterOptions", () => {
  it("has defaults well under a minute for failure detection", () => {
    const o = resolveClusterOptions();
    expect(o).toEqual(defaultClusterOptions);
    expect(o.deadNodeThresholdMs).toBe(15_000);
    expect(o.heartbeatIntervalMs * 3).toBeLessThanOrEqual(o.deadNodeThresholdMs);
    expect(o.clockSkewWarnMs).toBe(1000);
    expect(o.deadRetentionMs).toBeGreaterThan(o.succeededRetentionMs);
  });

  it("lowers the default heartbeat and lease TTL with a short threshold", () => {
    expect(resolveClusterOptions({ deadNodeThresholdMs: 3000 })).toMatchObject({
      heartbeatIntervalMs: 1000,
      leaseTtlMs: 3000,
    });
  });

  it.each([
    [{ deadNodeThresholdMs: 10 }, "deadNodeThresholdMs"],
    [{ heartbeatIntervalMs: 6000 }, "a third of deadNodeThresholdMs"],
    [{ heartbeatIntervalMs: 1.5 }, "heartbeatIntervalMs"],
    [{ nodeRetentionMs: 1000 }, "at least deadNodeThresholdMs"],
    [{ pruneBatchSize: 0 }, "pruneBatchSize"],
    [{ leaseTtlMs: -1 }, "leaseTtlMs"],
    [{ leaseTtlMs: 20_000 }, "at most deadNodeThresholdMs"],
    [{ clockSkewWarnMs: "1s" }, "clockSkewWarnMs"],
    [{ succeededRetentionMs: Number.NaN }, "succeededRetentionMs"],
  ])("rejects %j", (options, fragment) => {
    let error: unknown;
    try {
      resolveClusterOptions(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_CONFIG");
    expect((error as Error).message).toContain(fragment);
  });

  it("is part of createPawl's options", () => {
    const config = resolveConfig({ deadNodeThresholdMs: 3000, pruneBatchSize: 10 });
    expect(config.runtime).toMatchObject({ deadNodeThresholdMs: 3000, pruneBatchSize: 10 });
    const runtime = resolveRuntimeOptions(config.runtime, undefined);
    expect(runtime.cluster).toMatchObject({
      deadNodeThresholdMs: 3000,
      heartbeatIntervalMs: 1000,
      pruneBatchSize: 10,
    });
    for (const key of clusterOptionKeys) expect(() => resolveConfig({ [key]: undefined })).not.toThrow();
    // Resolved once, with the rest of the config: the node reads this, and a bad value fails here.
    expect(config.runtimeOptions.cluster).toEqual(runtime.cluster);
    expect(() => resolveConfig({ deadNodeThresholdMs: 1 })).toThrow(ValidationError);
  });
});

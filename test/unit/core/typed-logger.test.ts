/**
 * The logger contract against the ecosystem: `logger: console` as it is (no `child`: pawl binds the
 * fields itself), and a real pino through `pinoLogger`, which maps pawl's `(message, fields)` to pino's
 * `(fields, message)` so no field is lost.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pinoLogger } from "../../../src/index.js";
import { resolveConfig } from "../../../src/input/config.js";

afterEach(() => {
  vi.restoreAllMocks();
});

function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

describe("logger: console", () => {
  it("is accepted as given and logs with the bound fields merged into each line", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { logger } = resolveConfig({ logger: console });
    logger.child({ nodeId: "a" }).child({ jobId: "7" }).warn("slow", { ms: 5 });
    expect(warn).toHaveBeenCalledWith("slow", { nodeId: "a", jobId: "7", ms: 5 });
  });
});

describe("pinoLogger", () => {
  it("writes the message as msg and the fields as properties, with pino's own child bindings", () => {
    const { lines, stream } = capture();
    const { logger } = resolveConfig({ logger: pinoLogger(pino({ level: "debug" }, stream)) });
    logger.child({ nodeId: "a" }).info("job started", { jobId: "7", attempt: 1 });
    logger.debug("no fields");
    expect(lines[0]).toMatchObject({ level: 30, msg: "job started", nodeId: "a", jobId: "7", attempt: 1 });
    expect(lines[1]).toMatchObject({ level: 20, msg: "no fields" });
  });

  it("is needed: pino given as it is drops the fields (read as format arguments)", () => {
    const { lines, stream } = capture();
    const raw = pino(stream);
    (raw.info as (m: string, f: object) => void)("job started", { jobId: "7" });
    expect(lines[0]).toMatchObject({ msg: "job started" });
    expect(lines[0]).not.toHaveProperty("jobId");
  });
});

/**
 * The logger contract against the ecosystem: `logger: console` as it is (no `child`: pawl binds the
 * fields itself), a real pino as it is (recognised and adapted) or through `pinoLogger`, which maps
 * pawl's `(message, fields)` to pino's `(fields, message)` so no field is lost; the default (warnings and
 * errors on stderr) and `logger: false`.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pinoLogger } from "../../../src/index.js";
import { resolveConfig } from "../../../src/input/config.js";
import { ValidationError } from "../../../src/core/errors.js";

/** What `run` wrote to process.stderr, the default logger's real destination. */
function stderrOf(run: () => void): string {
  const chunks: string[] = [];
  const write = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    run();
  } finally {
    write.mockRestore();
  }
  return chunks.join("");
}

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

describe("the logger option", () => {
  it("defaults to warnings and errors as JSON lines on stderr, info and debug dropped", () => {
    const out = stderrOf(() => {
      const log = resolveConfig({}).logger.child({ nodeId: "a" });
      log.debug("d");
      log.info("i");
      log.warn("claim failed; the poller backs off", { error: "boom" });
      log.error("node actor failed");
    });
    const lines = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: "warn",
      message: "claim failed; the poller backs off",
      nodeId: "a",
      error: "boom",
    });
    expect(lines[1]).toMatchObject({ level: "error", message: "node actor failed", nodeId: "a" });
  });

  it("false writes nothing anywhere", () => {
    const out = stderrOf(() => resolveConfig({ logger: false }).logger.error("unseen"));
    expect(out).toBe("");
  });

  it("takes a real pino as it is, fields and child bindings kept", () => {
    const { lines, stream } = capture();
    const { logger } = resolveConfig({ logger: pino({ level: "debug" }, stream) });
    logger.child({ nodeId: "a" }).warn("claim failed", { error: "boom" });
    expect(lines[0]).toMatchObject({ level: 40, msg: "claim failed", nodeId: "a", error: "boom" });
  });

  it("takes a pino child as it is (Fastify's request.log is one)", () => {
    const { lines, stream } = capture();
    const { logger } = resolveConfig({ logger: pino(stream).child({ service: "web" }) });
    logger.error("lost", { attempt: 2 });
    expect(lines[0]).toMatchObject({ level: 50, msg: "lost", service: "web", attempt: 2 });
  });

  it.each([
    ["a string", "info"],
    ["true", true],
    ["null", null],
    ["an object without methods", { warn: 1 }],
  ])("refuses %s with INVALID_CONFIG", (_name, value) => {
    const error = (() => {
      try {
        resolveConfig({ logger: value as never });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_CONFIG");
    expect((error as Error).message).toMatch(/invalid logger/);
  });
});

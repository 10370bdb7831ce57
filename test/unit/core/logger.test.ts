/**
 * pawl logs through the host's logger from timers and error paths, so logging must never throw into
 * pawl: `guardLogger` drops a line whose write throws and survives a `child` that fails, and the
 * console logger writes a line even when a field cannot be serialised.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { consoleLogger, guardLogger, type Logger } from "../../../src/core/logger.js";

function throwingLogger(): Logger {
  const boom = (): never => {
    throw new Error("transport down");
  };
  return { debug: boom, info: boom, warn: boom, error: boom, child: boom };
}

function recordingLogger(lines: [string, string, unknown][], childResult?: unknown): Logger {
  const at =
    (level: string) =>
    (message: string, fields?: unknown): void => {
      lines.push([level, message, fields]);
    };
  const self: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => (childResult === undefined ? self : (childResult as Logger)),
  };
  return self;
}

describe("guardLogger", () => {
  it("drops a line whose write throws, at every level and through children", () => {
    const log = guardLogger(throwingLogger());
    expect(() => log.warn("w", { a: 1 })).not.toThrow();
    expect(() => log.error("e")).not.toThrow();
    const child = log.child({ jobId: "1" });
    expect(() => child.info("i")).not.toThrow();
    expect(() => child.child({ x: 1 }).debug("d")).not.toThrow();
  });

  it("falls back to the parent with the fields bound when child() returns no logger", () => {
    const lines: [string, string, unknown][] = [];
    const log = guardLogger(recordingLogger(lines, { info: "not a logger" }));
    log.child({ jobId: "7" }).warn("slow", { ms: 3 });
    expect(lines).toEqual([["warn", "slow", { jobId: "7", ms: 3 }]]);
  });

  it("passes lines through unchanged when the logger behaves", () => {
    const lines: [string, string, unknown][] = [];
    guardLogger(recordingLogger(lines)).info("hello", { a: 1 });
    expect(lines).toEqual([["info", "hello", { a: 1 }]]);
  });
});

describe("consoleLogger", () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes a line even when a field cannot be serialised", () => {
    const writes: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    const log = consoleLogger("debug");
    expect(() => log.error("bigint field", { n: 1n })).not.toThrow();
    expect(writes).toHaveLength(1);
    expect(JSON.parse(writes[0] as string)).toMatchObject({ level: "error", message: "bigint field" });
  });
});

describe("redaction of connection URLs in log lines", () => {
  afterEach(() => vi.restoreAllMocks());
  const url = "postgres://app:p@ss/w#rd@db:5432/jobs";

  it("consoleLogger removes the password from the message, fields and bound fields", () => {
    const writes: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    consoleLogger("debug", { db: url }).child({ again: url }).warn(`cannot reach ${url}`, { url, n: 1 });
    expect(writes).toHaveLength(1);
    expect(writes[0]).not.toContain("p@ss");
    expect(writes[0]).not.toContain("w#rd");
    expect(JSON.parse(writes[0] as string)).toMatchObject({
      message: "cannot reach postgres://app:***@db:5432/jobs",
      url: "postgres://app:***@db:5432/jobs",
      db: "postgres://app:***@db:5432/jobs",
      n: 1,
    });
  });

  it("guardLogger hands the host's logger redacted text and errors, and other values as they are", () => {
    const seen: { message: string; fields?: Record<string, unknown> }[] = [];
    const host = {
      debug() {},
      info() {},
      error() {},
      warn: (message: string, fields?: Record<string, unknown>) =>
        seen.push({ message, ...(fields ? { fields } : {}) }),
    };
    const invalid = Object.assign(new TypeError("Invalid URL"), { code: "ERR_INVALID_URL", input: url });
    const plain = new Error("no secret here");
    const when = new Date(0);
    guardLogger(host).warn(`failed: ${url}`, { invalid, plain, when, count: 2 });
    const [line] = seen;
    expect(line?.message).toBe("failed: postgres://app:***@db:5432/jobs");
    expect(JSON.stringify(line?.fields)).not.toContain("p@ss");
    expect(line?.fields?.invalid).toBeInstanceOf(Error);
    expect((line?.fields?.invalid as { code?: string }).code).toBe("ERR_INVALID_URL");
    expect(line?.fields?.plain).toBe(plain);
    expect(line?.fields?.when).toBe(when);
    expect(line?.fields?.count).toBe(2);
  });
});

/** Which failed outcome writes are split to isolate a bad value, and which are retried (logic/write-failure.ts). */
import { describe, expect, it } from "vitest";
import { writeFailure } from "../../../src/logic/write-failure.js";

const pgError = (code: string) => Object.assign(new Error("from PostgreSQL"), { code });

describe("writeFailure", () => {
  it.each([
    { what: "unsupported Unicode escape (NUL in jsonb)", error: pgError("22P05"), kind: "data" },
    { what: "invalid JSON (a lone surrogate)", error: pgError("22P02"), kind: "data" },
    { what: "a NUL byte in text", error: pgError("22021"), kind: "data" },
    { what: "bigint out of range", error: pgError("22003"), kind: "data" },
    { what: "a check constraint", error: pgError("23514"), kind: "data" },
    { what: "stack depth limit exceeded", error: pgError("54001"), kind: "data" },
    { what: "administrator shutdown", error: pgError("57P01"), kind: "transient" },
    { what: "connection failure", error: pgError("08006"), kind: "transient" },
    { what: "too many connections", error: pgError("53300"), kind: "transient" },
    { what: "a deadlock", error: pgError("40P01"), kind: "transient" },
    { what: "an undefined table", error: pgError("42P01"), kind: "transient" },
    {
      what: "a socket error",
      error: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }),
      kind: "transient",
    },
    { what: "no code at all", error: new Error("Connection terminated unexpectedly"), kind: "transient" },
    { what: "a non-error", error: "boom", kind: "transient" },
    { what: "null", error: null, kind: "transient" },
    { what: "a numeric code", error: { code: 22021 }, kind: "transient" },
    {
      what: "a code getter that throws",
      error: {
        get code(): never {
          throw new Error("no");
        },
      },
      kind: "transient",
    },
  ])("$what -> $kind", ({ error, kind }) => {
    expect(writeFailure(error)).toBe(kind);
  });
});

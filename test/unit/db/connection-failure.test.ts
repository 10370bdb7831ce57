import { describe, expect, it } from "vitest";
import { DatabaseUnavailableError } from "../../../src/core/errors.js";
import {
  asDatabaseUnavailable,
  connectionFailureKind,
  poisonsConnection,
} from "../../../src/db/connection-failure.js";

const pgError = (code: string, message = "refused") => Object.assign(new Error(message), { code });

describe("connectionFailureKind and poisonsConnection", () => {
  it.each([
    // A server that cannot take writes now (a standby in recovery, a demoted primary): nothing written.
    { error: pgError("25006", "cannot execute INSERT in a read-only transaction"), kind: "connect" },
    { error: pgError("57P03", "the database system is in recovery mode"), kind: "connect" },
    { error: pgError("ECONNREFUSED"), kind: "connect" },
    // The connection broke after a statement may have been sent (a lost reply).
    { error: pgError("ECONNRESET", "read ECONNRESET"), kind: "lost" },
    { error: pgError("57P01", "terminating connection due to administrator command"), kind: "lost" },
    { error: new Error("Connection terminated unexpectedly"), kind: "lost" },
    // The statement's own failure: the connection is fine.
    { error: pgError("22012", "division by zero"), kind: null },
    { error: pgError("23505", "duplicate key"), kind: null },
    { error: pgError("40001", "could not serialize access"), kind: null },
  ])("$error.message -> $kind", ({ error, kind }) => {
    expect(connectionFailureKind(error)).toBe(kind);
    // Every connection failure, and only those, makes the connection unfit to be used again.
    expect(poisonsConnection(error)).toBe(kind !== null);
  });

  it("turns a read-only refusal into DatabaseUnavailableError with maybeWritten false", () => {
    const e = asDatabaseUnavailable(pgError("25006", "cannot execute INSERT in a read-only transaction"));
    expect(e).toBeInstanceOf(DatabaseUnavailableError);
    expect((e as DatabaseUnavailableError).maybeWritten).toBe(false);
  });
});

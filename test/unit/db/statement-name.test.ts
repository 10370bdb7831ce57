/**
 * Prepared-statement names stay within PostgreSQL's 63 bytes for every schema the docs allow, and stay
 * distinct: the server would otherwise truncate two statements of a long schema to one name.
 */
import { describe, expect, it } from "vitest";
import { statementName } from "../../../src/db/sql.js";

const longest = "s".repeat(63);
const long38 = "x".repeat(38);

describe("statementName", () => {
  it.each([
    ["pawl", "claim_full", "pawl_pawl_claim_full"],
    ["a", "x", "pawl_a_x"],
    // 5 + 52 + 1 + 5 = 63 bytes: the longest plain name.
    ["p".repeat(52), "claim", `pawl_${"p".repeat(52)}_claim`],
  ])("keeps %s / %s plain while it fits: %s", (schema, name, expected) => {
    expect(statementName(schema, name)).toBe(expected);
  });

  it.each([
    [long38, "keyed_claim_window_full"],
    [longest, "claim_full"],
    [longest, "n".repeat(80)],
    ["p".repeat(53), "claim"],
  ])("bounds %s / %s to 63 bytes, hashed", (schema, name) => {
    const full = statementName(schema, name);
    expect(Buffer.byteLength(full)).toBeLessThanOrEqual(63);
    expect(full).toMatch(/^pawl_[0-9a-f]{12}_/);
    expect(statementName(schema, name)).toBe(full);
  });

  it("gives distinct names to statements whose truncated forms would collide", () => {
    const names = [
      "claim_full",
      "claim_light",
      "keyed_claim_full",
      "keyed_claim_light",
      "n".repeat(60) + "a",
      "n".repeat(60) + "b",
    ];
    const schemas = [longest, longest.slice(0, 62) + "t", long38];
    const all = schemas.flatMap((s) => names.map((n) => statementName(s, n)));
    expect(new Set(all).size).toBe(all.length);
    // What PostgreSQL would have made of the old names: the first 63 bytes, colliding.
    const truncated = names.map((n) => `pawl_${longest}_${n}`.slice(0, 63));
    expect(new Set(truncated).size).toBe(1);
  });
});

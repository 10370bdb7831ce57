import { describe, expect, it } from "vitest";
import { decodeHint, encodeHint, MAX_FINISHED_IDS } from "../../../coordinators/hint-codec.js";

describe("the finished hint on the wire", () => {
  it("round-trips its job ids, and an id-less notice", () => {
    const hint = { kind: "finished" as const, jobIds: ["1", "42"], priority: 0, source: "a" };
    expect(decodeHint(encodeHint(hint))).toEqual(hint);
    const all = { kind: "finished" as const, priority: 0, source: "a" };
    expect(decodeHint(encodeHint(all))).toEqual(all);
  });

  it.each([
    ["an empty id list", []],
    ["an id that is not a decimal bigint", ["1", "x"]],
    ["a zero or signed id", ["0"]],
    ["too many ids", Array.from({ length: MAX_FINISHED_IDS + 1 }, (_, i) => String(i + 1))],
    ["ids that are not a list", "1"],
  ])("decodes %s as malformed", (_what, jobIds) => {
    const raw = JSON.stringify({ pawl: 1, kind: "finished", priority: 0, source: "x", jobIds });
    expect(decodeHint(raw)).toBeNull();
  });

  it("fits the largest list under the NOTIFY limit", () => {
    const jobIds = Array.from({ length: MAX_FINISHED_IDS }, () => "9223372036854775807");
    const text = encodeHint({ kind: "finished", jobIds, priority: 0, source: "n".repeat(200) });
    expect(text).not.toBeNull();
    expect(decodeHint(text)).toMatchObject({ jobIds });
  });

  it("drops a jobId field that only cancel hints carry", () => {
    expect(
      decodeHint(
        JSON.stringify({ pawl: 1, kind: "finished", priority: 0, source: "x", jobIds: ["7"], jobId: "9" }),
      ),
    ).toEqual({ kind: "finished", jobIds: ["7"], priority: 0, source: "x" });
  });
});

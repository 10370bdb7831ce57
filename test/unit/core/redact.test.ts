/**
 * Redaction of connection URLs: the password goes, whatever raw characters it holds and whether or not
 * the URL parses; the rest stays readable.
 */
import { describe, expect, it } from "vitest";
import { redactText, redactUrl } from "../../../src/core/redact.js";

describe("redactUrl", () => {
  it.each([
    ["amqp://guest:guest@localhost:5672", "amqp://guest:***@localhost:5672"],
    ["postgres://app:s3cret@db:5432/jobs", "postgres://app:***@db:5432/jobs"],
    ["postgresql://app:s3cret@db/jobs?sslmode=require", "postgresql://app:***@db/jobs?sslmode=require"],
    // Raw reserved characters in the password: the URL does not parse, or parses wrongly.
    ["postgres://app:p@ss@db/jobs", "postgres://app:***@db/jobs"],
    ["postgres://app:pa/ss@db/jobs", "postgres://app:***@db/jobs"],
    ["postgres://app:pa#ss@db/jobs", "postgres://app:***@db/jobs"],
    ["postgres://app:pa?ss@db/jobs", "postgres://app:***@db/jobs"],
    ["postgres://app:@#/?:@db:5432/jobs", "postgres://app:***@db:5432/jobs"],
    ["postgres://app:%40encoded@db/jobs", "postgres://app:***@db/jobs"],
    ["POSTGRES://App:Secret@Db/Jobs", "POSTGRES://App:***@Db/Jobs"],
    // No password: nothing to remove.
    ["postgres://app@db/jobs", "postgres://app@db/jobs"],
    ["postgres://db:5432/jobs", "postgres://db:5432/jobs"],
    ["postgres://db/jobs?application_name=a@b", "postgres://db/jobs?application_name=a@b"],
    // A password as a query parameter, or in a key/value string.
    [
      "postgres://db/jobs?user=app&password=s3cret&sslmode=require",
      "postgres://db/jobs?user=app&password=***&sslmode=require",
    ],
    ["host=db user=app password=s3cret dbname=jobs", "host=db user=app password=*** dbname=jobs"],
    ["host=db password='se cret' dbname=jobs", "host=db password=*** dbname=jobs"],
    ["PGPASSWORD=s3cret", "PGPASSWORD=***"],
    ["not a url", "not a url"],
    ["", ""],
  ])("%s -> %s", (input, expected) => {
    expect(redactUrl(input)).toBe(expected);
  });

  it("masks more when unsure, never less: a port and path before an @ in the query", () => {
    const out = redactUrl("postgres://db:5432/jobs?x=a@b");
    expect(out).not.toContain("5432/jobs?x=a");
    expect(out.startsWith("postgres://db:***@")).toBe(true);
  });
});

describe("redactText", () => {
  it("removes every URL's password from free text, in quotes, JSON and lists", () => {
    const text =
      'connect "postgres://u:one@a/db" failed; fallback amqp://g:two@mq:5672, ' +
      '{"url":"postgres://u:th@ree@c/db"} and hz://x:f/our@h';
    const out = redactText(text);
    for (const secret of ["one", "two", "th@ree", "ree", "f/our"]) expect(out).not.toContain(`:${secret}@`);
    expect(out).toBe(
      'connect "postgres://u:***@a/db" failed; fallback amqp://g:***@mq:5672, ' +
        '{"url":"postgres://u:***@c/db"} and hz://x:***@h',
    );
  });

  it("leaves text without secrets as it is", () => {
    const text = "claim failed: connection terminated unexpectedly (see http://example.com/docs)";
    expect(redactText(text)).toBe(text);
  });
});

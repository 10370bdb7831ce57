/**
 * `npm start` on a newcomer's machine (issue 43): the demo runs on the local server only when that server
 * accepts it, and otherwise on the embedded database, saying why and how to point it elsewhere. The
 * local server is tried for real: the test database (accepted), the same server with a database that does
 * not exist, and a port where nothing listens; a refused password is the same path (any refusal), shown
 * with its message in the table.
 */
import { describe, expect, it } from "vitest";
import { chooseDatabase, embeddedUrl, tryServer } from "../../../examples/demo/database.js";
import { databaseUrl } from "../../helpers/db.js";

const noDatabase = (() => {
  const u = new URL(databaseUrl);
  u.pathname = "/pawl_demo_no_such_database";
  return u.toString();
})();

describe("the demo's database", () => {
  it("is the local server when it accepts the demo", async () => {
    const d = await chooseDatabase({}, databaseUrl);
    expect(d).toMatchObject({ url: databaseUrl, embedded: false });
    expect(d.explanation).toMatch(/^using the local server at /);
  });

  it.each([
    ["its database is missing", noDatabase, /does not exist/],
    ["nothing listens there", "postgres://postgres@127.0.0.1:1/postgres", /ECONNREFUSED|connect/],
  ])("is the embedded database when %s, with the reason and the way out", async (_name, local, reason) => {
    const d = await chooseDatabase({}, local);
    expect(d).toMatchObject({ url: embeddedUrl, embedded: true });
    expect(d.explanation).toMatch(reason);
    expect(d.explanation).toContain("DATABASE_URL=postgres://");
  });

  it("falls back on a refused password like any refusal", async () => {
    const refused = async () =>
      ({ accepted: false, reason: 'password authentication failed for user "postgres"' }) as const;
    const d = await chooseDatabase({}, "postgres://postgres@127.0.0.1:5432/postgres", refused);
    expect(d).toMatchObject({ url: embeddedUrl, embedded: true });
    expect(d.explanation).toContain('password authentication failed for user "postgres"');
  });

  it("is DATABASE_URL when set, untried", async () => {
    const never = async (): Promise<never> => {
      throw new Error("the local server must not be tried");
    };
    expect(await chooseDatabase({ DATABASE_URL: "pglite://./data" }, databaseUrl, never)).toMatchObject({
      url: "pglite://./data",
      embedded: true,
    });
    expect(await chooseDatabase({ DATABASE_URL: noDatabase }, databaseUrl, never)).toMatchObject({
      url: noDatabase,
      embedded: false,
    });
  });

  it("tries a server without throwing, whatever happens", async () => {
    expect(await tryServer(databaseUrl)).toEqual({ accepted: true });
    expect(await tryServer(noDatabase)).toMatchObject({ accepted: false });
    expect(await tryServer("postgres://postgres@127.0.0.1:1/x")).toMatchObject({ accepted: false });
  });
});

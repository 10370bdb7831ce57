/** `pawl grants`: the SQL for each level, quoting, and that nothing in it changes the schema. */
import { describe, expect, it } from "vitest";
import { grantsSql, quoteRole } from "../../../src/store/migrations/grants-sql.js";

describe("grantsSql", () => {
  it("gives the application role rows, sequences and functions, and default privileges for later migrations", () => {
    const sql = grantsSql("pawl", "app_worker", "app");
    expect(sql).toContain('GRANT USAGE ON SCHEMA "pawl" TO "app_worker";');
    expect(sql).toContain(
      'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "pawl" TO "app_worker";',
    );
    expect(sql).toContain('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "pawl" TO "app_worker";');
    expect(sql).toContain('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA "pawl" TO "app_worker";');
    expect(sql.match(/ALTER DEFAULT PRIVILEGES/g)).toHaveLength(3);
  });

  it("gives a reader SELECT only", () => {
    const sql = grantsSql("pawl", "ops", "reader");
    expect(sql).toContain('GRANT SELECT ON ALL TABLES IN SCHEMA "pawl" TO "ops";');
    expect(sql).not.toMatch(/INSERT|UPDATE|DELETE|EXECUTE|SEQUENCES/);
  });

  it("never grants the right to change the schema", () => {
    for (const level of ["app", "reader"] as const) {
      expect(grantsSql("pawl", "r", level)).not.toMatch(
        /\bCREATE\b|TRUNCATE|REFERENCES|TRIGGER|ALL PRIVILEGES/,
      );
    }
  });

  it.each([
    ["app", '"app"'],
    ['we"ird', '"we""ird"'],
    ["Mixed-Case", '"Mixed-Case"'],
  ])("quotes the role %s as %s", (role, quoted) => {
    expect(quoteRole(role)).toBe(quoted);
  });
});

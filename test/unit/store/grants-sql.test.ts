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
    expect(sql).not.toMatch(/INSERT|UPDATE|DELETE|SEQUENCES|ALL FUNCTIONS|partition/);
    // Its reads call these; named, so the role works where EXECUTE is revoked from PUBLIC.
    expect(sql).toContain(
      'GRANT EXECUTE ON FUNCTION "pawl".pawl_key_running(text), "pawl".pawl_pause_rule(text, text) TO "ops";',
    );
  });

  it("keeps the migration record away from the application role", () => {
    expect(grantsSql("pawl", "app_worker", "app")).toContain(
      'REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON "pawl".pawl_migrations FROM "app_worker";',
    );
  });

  it("gives an enqueue-only role the insert, its sequence and the enqueue functions, and nothing more", () => {
    const sql = grantsSql("pawl", "submitter", "enqueue");
    expect(sql).toContain('GRANT SELECT, INSERT ON "pawl".scheduler_job_queue TO "submitter";');
    expect(sql).toContain('GRANT USAGE ON SEQUENCE "pawl".scheduler_job_queue_id_seq TO "submitter";');
    expect(sql).toContain('"pawl".enqueue(text, jsonb, jsonb)');
    expect(sql).not.toMatch(
      /ALL TABLES|ALL FUNCTIONS|ALL SEQUENCES|DELETE|DEFAULT PRIVILEGES|scheduler_node|claim/,
    );
  });

  it("never grants the right to change the schema", () => {
    for (const level of ["app", "reader", "enqueue"] as const) {
      const grants = grantsSql("pawl", "r", level)
        .split("\n")
        .filter((l) => !l.startsWith("REVOKE"));
      expect(grants.join("\n")).not.toMatch(/\bCREATE\b|TRUNCATE|REFERENCES|TRIGGER|ALL PRIVILEGES/);
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

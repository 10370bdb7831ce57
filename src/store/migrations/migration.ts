/** The shape of one migration, shared by the generated list (migrations.generated.ts) and the runner (migrate.ts). */
/** One migration file. */
export interface Migration {
  /** The number in its file name (0001 -> 1). */
  version: number;
  /** The file name. */
  name: string;
  /** The SQL, with `{{schema}}` placeholders. */
  sql: string;
}

/**
 * Whether nodes of the previous release stay correct beside `m`, as its first line declares
 * (`-- previous release: compatible` or `-- previous release: breaking (why)`; migrations before 0012
 * declare nothing and count as compatible). A breaking one is recorded in pawl_migrations.breaking when it
 * is applied, so an older node that finds it refuses to start (SchemaVersionError).
 *
 * @example
 * ```ts
 * isBreaking({ version: 13, name: "0013_x.sql", sql: "-- previous release: breaking (drops a column)\n..." }); // true
 * ```
 */
export function isBreaking(m: Migration): boolean {
  return /^--\s*previous release:\s*breaking/im.test(m.sql);
}

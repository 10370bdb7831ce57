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

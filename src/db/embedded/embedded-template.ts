/**
 * A freshly initialised data directory, dumped once per process, that memory databases boot from
 * (PGlite's `loadDataDir`): about 0.5 s a database instead of the 3-4 s initdb takes. For test suites
 * that open many databases; an application opens one and gains nothing, so only pawl/testing uses it.
 */
import { importOptional } from "../../core/errors.js";

let template: Promise<Blob> | undefined;

/** The process's template (made on first use: one initdb, then a dump of about 40 MB kept in memory). */
export function embeddedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const { PGlite } = await importOptional(
      "@electric-sql/pglite",
      "the embedded database",
      () => import("@electric-sql/pglite"),
    );
    const db = await PGlite.create();
    try {
      return await db.dumpDataDir("none");
    } finally {
      await db.close();
    }
  })();
  // A failed build is not cached: the next database tries again.
  template.catch(() => {
    template = undefined;
  });
  return template;
}

/**
 * The wakeup hint for jobs made runnable again under their old ids (a signal, a machine's event, a resume)
 * by a process with no coordinator to publish it: a bare `PawlClient`. It goes out from SQL, on the
 * schema's postgres wakeup channel (`pawl_wakeup_channel`, migration 0007), in the wire format of
 * coordinators/hint-codec.ts, as the SQL `enqueue()` function sends its own. Nodes on the postgres
 * coordinator then look at once, and with `released` their claim cursors look below their floors; without
 * it they would find the jobs only at their next full pass (up to a minute on an idle node).
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** The runnable work of one job type, as its hint names it. */
export interface ReleasedWork {
  type: string;
  priority: number;
}

/** Sends one `released` work hint per entry (in `db`'s transaction when it is one: delivered at commit). */
export async function notifyReleased(db: Queryable, t: Tables, work: readonly ReleasedWork[]): Promise<void> {
  if (work.length === 0) return;
  const stmt = named(
    t,
    "released_notify",
    `SELECT pg_notify(${t.s}.pawl_wakeup_channel($1), format(
       '{"pawl":1,"kind":"work","priority":%s,"source":"sql","target":%s,"released":true}',
       w.priority, to_json(w.type)::text))
     FROM unnest($2::text[], $3::int[]) AS w(type, priority)`,
  );
  await db.query(stmt([t.schema, work.map((w) => w.type), work.map((w) => w.priority)]));
}

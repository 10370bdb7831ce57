/**
 * {@link createClient}: the one way to make a {@link PawlClient}, the enqueue-and-read half of pawl. It is
 * what `pawl/client` exports, so it imports nothing of the node: no xstate, no claim loop, no background
 * services (test/package/module-formats.test.ts checks the modules that entry loads).
 */
import { PawlClient } from "./client.js";
import type { PawlConfig } from "../input/config.js";
import type { PawlTasks } from "../input/task-map.js";

/**
 * Creates a client: enqueue, wait for and read jobs over one schema, without running any. For a web
 * process beside a worker (which uses `createPawl` and `start()`): a client joins no cluster and loads
 * neither the runtime nor xstate. `Tasks` types its job types, as for `createPawl`.
 *
 * @example
 * ```ts
 * import { createClient } from "pawl/client";
 * const client = createClient({ connectionString: process.env.DATABASE_URL });
 * const job = await client.enqueue("email.send", { to: "a@b.c" });
 * const done = await client.waitFor(job.id, { timeoutMs: 5_000 });
 * console.log(done.status, (await client.getJob(job.id))?.result);
 * await client.close();
 * ```
 */
export function createClient<Tasks extends object = PawlTasks>(config?: PawlConfig): PawlClient<Tasks> {
  return new PawlClient<Tasks>(config);
}

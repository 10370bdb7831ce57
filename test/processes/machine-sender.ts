/**
 * A sender process for test/processes/machines.test.ts: sends `perJob` events `{ type: "EV", n }` to each
 * machine job in JOB_IDS (comma-separated), `n` being `<SENDER>-<k>`, 16 sends in flight at a time, each
 * retried until acknowledged (a send that fails was not stored). Prints `{"event":"done","sent":N}`.
 *
 * Environment: DATABASE_URL, PAWL_SCHEMA, SENDER, PER_JOB, JOB_IDS.
 */
import { PawlClient } from "../../src/index.js";

const client = new PawlClient({
  connectionString: process.env.DATABASE_URL,
  schema: process.env.PAWL_SCHEMA,
});
const sender = process.env.SENDER ?? "s";
const perJob = Number(process.env.PER_JOB ?? 1);
const ids = (process.env.JOB_IDS ?? "").split(",").filter(Boolean);

const work: { id: string; n: string }[] = [];
for (let k = 0; k < perJob; k++) for (const id of ids) work.push({ id, n: `${sender}-${k}` });
let sent = 0;
let next = 0;
async function lane(): Promise<void> {
  while (next < work.length) {
    const item = work[next++]!;
    for (;;) {
      try {
        await client.send(item.id, { type: "EV", n: item.n });
        sent++;
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
}
await Promise.all(Array.from({ length: 16 }, lane));
await client.close();
process.stdout.write(JSON.stringify({ event: "done", sent }) + "\n");

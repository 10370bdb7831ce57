/**
 * Which database the demo runs on, so `npm start` works on a fresh laptop: `DATABASE_URL` when set
 * (a `postgres://` server, or a `pglite://` embedded database); else the local server at 127.0.0.1:5432
 * when something answers there; else the embedded database (PGlite, in this process, in memory).
 */
import { connect } from "node:net";

/** The server `npm start` uses when one answers and `DATABASE_URL` is unset. */
export const localServerUrl = "postgres://postgres@127.0.0.1:5432/postgres";

/** The embedded database the demo falls back to. */
export const embeddedUrl = "pglite://memory";

/** The demo's database and the line that explains the choice. */
export interface DemoDatabase {
  url: string;
  embedded: boolean;
  /** Printed first, so a newcomer sees where the demo runs and how to change it. */
  explanation: string;
}

/** Chooses the demo's database (see the file's summary). */
export async function chooseDatabase(env: NodeJS.ProcessEnv = process.env): Promise<DemoDatabase> {
  const given = env.DATABASE_URL;
  if (given !== undefined && given !== "") {
    const embedded = given.startsWith("pglite://");
    return { url: given, embedded, explanation: `using DATABASE_URL (${embedded ? given : "a server"})` };
  }
  if (await answers("127.0.0.1", 5432, 1_000)) {
    return { url: localServerUrl, embedded: false, explanation: `using the local server at 127.0.0.1:5432` };
  }
  return {
    url: embeddedUrl,
    embedded: true,
    explanation:
      "no PostgreSQL at 127.0.0.1:5432 and DATABASE_URL unset: running on the embedded database " +
      "(PGlite in this process, in memory; see docs/embedded.md). For a server: " +
      "DATABASE_URL=postgres://user@host:5432/db npm start",
  };
}

/** Whether a TCP connection to host:port opens within `timeoutMs` (only a connection, no protocol). */
function answers(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

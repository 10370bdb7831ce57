/**
 * Which database the demo runs on, so `npm start` works on a fresh laptop: `DATABASE_URL` when set
 * (a `postgres://` server, or a `pglite://` embedded database); else the local server at 127.0.0.1:5432
 * when it accepts the demo (it connects, logs in and answers a query); else the embedded database (PGlite,
 * in this process, in memory). A local server that is not running, refuses the password or lacks the
 * database is not an error for a demo: it runs embedded and says why, and how to point it elsewhere.
 */
import pg from "pg";

/** The server `npm start` uses when it accepts the demo and `DATABASE_URL` is unset. */
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

/** What trying a server gave: accepted, or why not (its own message: "password authentication failed..."). */
export type ServerAnswer = { accepted: true } | { accepted: false; reason: string };

/**
 * Chooses the demo's database (see the file's summary). `tryServer` is how a server is tried (the real
 * {@link tryServer} by default); `localUrl` the local server's URL.
 */
export async function chooseDatabase(
  env: NodeJS.ProcessEnv = process.env,
  localUrl: string = localServerUrl,
  tryLocal: (url: string) => Promise<ServerAnswer> = tryServer,
): Promise<DemoDatabase> {
  const given = env.DATABASE_URL;
  if (given !== undefined && given !== "") {
    const embedded = given.startsWith("pglite://");
    return { url: given, embedded, explanation: `using DATABASE_URL (${embedded ? given : "a server"})` };
  }
  const where = new URL(localUrl);
  const answer = await tryLocal(localUrl);
  if (answer.accepted) {
    return { url: localUrl, embedded: false, explanation: `using the local server at ${where.host}` };
  }
  return {
    url: embeddedUrl,
    embedded: true,
    explanation:
      `the local server at ${where.host} did not accept the demo (${answer.reason}), and DATABASE_URL is ` +
      "unset: running on the embedded database (PGlite in this process, in memory; see docs/embedded.md). " +
      "For a server: DATABASE_URL=postgres://user:password@host:5432/db npm start",
  };
}

/**
 * Connects to `url` as the demo would, and runs `SELECT 1`, within `timeoutMs`. Never throws: anything that
 * fails is a refusal, with the server's or the socket's message as the reason.
 */
export async function tryServer(url: string, timeoutMs = 2_000): Promise<ServerAnswer> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  // An error after the connection (the server going away mid-try) must not crash the demo.
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return { accepted: true };
  } catch (error) {
    const e = error as { message?: unknown; code?: unknown };
    const message = typeof e.message === "string" && e.message !== "" ? e.message : String(e.code ?? error);
    return { accepted: false, reason: message };
  } finally {
    await client.end().catch(() => {});
  }
}

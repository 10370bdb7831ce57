import pg from "pg";
import { databaseUrl } from "./db.js";
import { startHazelcastForRun } from "./hazelcast.js";

/**
 * Runs once before the whole suite: fails fast with a clear message when PostgreSQL is not reachable,
 * instead of letting every test time out on its own.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${databaseUrl}: ${String(error)}`);
  } finally {
    await client.end().catch(() => {});
  }
  // The hazelcast coordinator tests need a member; it starts in the background and the returned
  // teardown stops it only if this run started it.
  return startHazelcastForRun();
}

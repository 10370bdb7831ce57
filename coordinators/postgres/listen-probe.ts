/**
 * Proves that a LISTEN connection hears notifications. Through a transaction-mode pooler (PgBouncer,
 * RDS Proxy, Supavisor) LISTEN succeeds and then hears nothing, ever, without an error: the pooler ran it
 * on whichever server connection it lent for that one statement, and a notification reaching that server
 * connection later goes to whoever holds it then, or nowhere. So after each (re)connect the coordinator
 * LISTENs on a channel of its own and sends one NOTIFY there from a separate, short-lived connection.
 *
 * Separate on purpose: a NOTIFY sent on the listening client itself could land, through the pooler, on the
 * very server connection that ran the LISTEN, and be delivered to the sender in the same round trip, which
 * would "prove" a LISTEN that hears nothing from anyone else.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

/** A probe channel, unique to one coordinator instance, so no other node ever hears its probes. */
export function probeChannelName(): string {
  return `pawl_probe_${randomBytes(8).toString("hex")}`;
}

/**
 * Sends one NOTIFY on `channel` with `payload` from a connection of its own, then closes it. Rejects when
 * the connection or the statement fails; the caller treats that like an unheard probe.
 */
export async function sendProbe(
  connectionString: string,
  channel: string,
  payload: string,
  connectTimeoutMs: number,
): Promise<void> {
  const client = new pg.Client({
    connectionString,
    connectionTimeoutMillis: connectTimeoutMs,
    application_name: "pawl-listen-probe",
  });
  // A client's error with nobody listening would crash the host; the query's rejection carries it.
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT pg_notify($1, $2)", [channel, payload]);
  } finally {
    await client.end().catch(() => {});
  }
}

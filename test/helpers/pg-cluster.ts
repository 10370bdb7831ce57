/**
 * PostgreSQL clusters of a test's own (Debian's postgresql-common: pg_createcluster, pg_ctlcluster), and a
 * PgBouncer in front of them, for the failover test (test/processes/failover.test.ts). Everything runs as
 * the `postgres` user when the test runs as root. Only clusters and poolers created here are ever stopped
 * or dropped; the shared server on 5432 is never touched.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, chownSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

const version = "15";

function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { timeout: timeoutMs }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`${cmd} ${args.join(" ")} failed: ${stderr || error.message}`))
        : resolve(stdout),
    ),
  );
}

/** Runs a shell command as `postgres` (root) or as ourselves. */
function asPostgres(command: string, timeoutMs?: number): Promise<string> {
  return process.getuid?.() === 0
    ? run("su", ["postgres", "-s", "/bin/bash", "-c", command], timeoutMs)
    : run("bash", ["-c", command], timeoutMs);
}

/** `postgres://postgres@127.0.0.1:<port>/<db>`. */
export const clusterUrl = (port: number, db = "postgres"): string =>
  `postgres://postgres@127.0.0.1:${port}/${db}`;

/** One cluster of the test's own. */
export class OwnCluster {
  constructor(
    readonly name: string,
    readonly port: number,
  ) {}

  get dataDir(): string {
    return `/var/lib/postgresql/${version}/${this.name}`;
  }

  get confDir(): string {
    return `/etc/postgresql/${version}/${this.name}`;
  }

  /** Creates the cluster (trust on 127.0.0.1, listening there only) with `settings` in conf.d; not started. */
  async create(settings: Record<string, string> = {}): Promise<void> {
    await this.drop();
    await run("pg_createcluster", [
      version,
      this.name,
      "-p",
      String(this.port),
      "--start-conf=manual",
      "--",
      "--auth-local=trust",
      "--auth-host=trust",
    ]);
    const lines = Object.entries({ listen_addresses: "'127.0.0.1'", ...settings }).map(
      ([k, v]) => `${k} = ${v}`,
    );
    mkdirSync(join(this.confDir, "conf.d"), { recursive: true });
    writeFileSync(join(this.confDir, "conf.d", "pawl-test.conf"), `${lines.join("\n")}\n`);
  }

  /** Replaces this (created, stopped) cluster's data with a base backup of `primary`, as a streaming standby. */
  async baseBackupFrom(primary: OwnCluster, applicationName: string): Promise<void> {
    await asPostgres(`find ${this.dataDir} -mindepth 1 -delete`);
    await asPostgres(
      `pg_basebackup -h 127.0.0.1 -p ${primary.port} -U postgres -D ${this.dataDir} -R -c fast -X stream`,
    );
    // Named, so the primary's synchronous_standby_names can name it.
    await asPostgres(
      `echo "primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${applicationName}'" >> ${this.dataDir}/postgresql.auto.conf`,
    );
  }

  start(): Promise<string> {
    return run("pg_ctlcluster", ["--skip-systemctl-redirect", version, this.name, "start"]);
  }

  /** Stops the server: `immediate` is a crash (no shutdown checkpoint), `fast` a clean stop. */
  stop(mode: "fast" | "immediate" = "fast"): Promise<string> {
    return run("pg_ctlcluster", ["--skip-systemctl-redirect", version, this.name, "stop", "-m", mode]);
  }

  /** Promotes a standby, waiting until it accepts writes. */
  promote(): Promise<string> {
    return run("pg_ctlcluster", ["--skip-systemctl-redirect", version, this.name, "promote"]);
  }

  /** Stops (if running) and drops the cluster; nothing when it does not exist. */
  async drop(): Promise<void> {
    await run("pg_dropcluster", ["--stop", version, this.name]).catch(() => {});
  }

  /** A one-off query on the cluster. */
  async query<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: clusterUrl(this.port), connectionTimeoutMillis: 5000 });
    client.on("error", () => {});
    await client.connect();
    try {
      return (await client.query<R>(sql, values)).rows;
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** A PgBouncer (session mode) of the test's own, whose upstream can be moved and reloaded. */
export class OwnPgBouncer {
  private readonly dir: string;

  constructor(
    readonly port: number,
    private upstreamPort: number,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `pawl-pgbouncer-${port}-`));
  }

  get url(): string {
    return `${clusterUrl(this.port)}?connect_timeout=3`;
  }

  private writeIni(): void {
    writeFileSync(join(this.dir, "userlist.txt"), `"postgres" ""\n`);
    writeFileSync(
      join(this.dir, "pgbouncer.ini"),
      [
        "[databases]",
        `* = host=127.0.0.1 port=${this.upstreamPort}`,
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        `listen_port = ${this.port}`,
        "unix_socket_dir =",
        "auth_type = trust",
        `auth_file = ${this.dir}/userlist.txt`,
        "pool_mode = session",
        "default_pool_size = 40",
        "max_client_conn = 500",
        // Retry a server that refused a login after 1 s, not the default 15 s: a failover's endpoint must
        // reach the promoted server as soon as it is there.
        "server_login_retry = 1",
        "server_connect_timeout = 3",
        "ignore_startup_parameters = extra_float_digits,options",
        `logfile = ${this.dir}/pgbouncer.log`,
        `pidfile = ${this.dir}/pgbouncer.pid`,
      ].join("\n") + "\n",
    );
    if (process.getuid?.() === 0) {
      const uid = Number(readFileSync("/etc/passwd", "utf8").match(/^postgres:[^:]*:(\d+):(\d+):/m)?.[1]);
      const gid = Number(readFileSync("/etc/passwd", "utf8").match(/^postgres:[^:]*:(\d+):(\d+):/m)?.[2]);
      for (const f of ["", "userlist.txt", "pgbouncer.ini"]) chownSync(join(this.dir, f), uid, gid);
    }
  }

  async start(): Promise<void> {
    this.writeIni();
    await asPostgres(`pgbouncer -d ${this.dir}/pgbouncer.ini`);
    for (let i = 0; i < 50; i++) {
      try {
        await run("bash", ["-c", `exec 3<>/dev/tcp/127.0.0.1/${this.port}`], 2000);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error(`pgbouncer did not come up on ${this.port}; see ${this.dir}/pgbouncer.log`);
  }

  private pid(): number {
    return Number(readFileSync(join(this.dir, "pgbouncer.pid"), "utf8").trim());
  }

  /** Points the pooler at `port` and reloads it (SIGHUP), as a managed endpoint moves. */
  repoint(port: number): void {
    this.upstreamPort = port;
    this.writeIni();
    process.kill(this.pid(), "SIGHUP");
  }

  /** Reloads the configuration as it stands. */
  reload(): void {
    process.kill(this.pid(), "SIGHUP");
  }

  /** Stops the pooler this object started and removes its state directory. */
  stop(): void {
    try {
      process.kill(this.pid(), "SIGTERM");
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The pooler's log, for a failure's report. */
  log(): string {
    try {
      return readFileSync(join(this.dir, "pgbouncer.log"), "utf8");
    } catch {
      return "";
    }
  }
}

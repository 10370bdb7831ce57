/** The PostgreSQL LISTEN/NOTIFY coordinator (pg-listen), with a transactional publish path. */
export { PostgresCoordinator } from "./postgres-coordinator.js";
export {
  parsePostgresSpec,
  postgresChannelName,
  resolvePostgresConfig,
  type PostgresCoordinatorConfig,
  type PostgresCoordinatorInput,
  type PostgresCoordinatorSpec,
} from "./postgres-config.js";

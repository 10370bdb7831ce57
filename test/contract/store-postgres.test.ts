/** The store contract against PostgreSQL: one migrated schema, emptied before each test. */
import { afterAll, beforeAll } from "vitest";
import { PostgresJobStore } from "../../src/store/postgres-job-store.js";
import { dropSchema, testPool, uniqueSchema } from "../helpers/db.js";
import { describeStoreContract } from "./store-contract.js";

const pool = testPool();
const schema = uniqueSchema("store_contract");
const store = new PostgresJobStore(pool, schema);

beforeAll(async () => {
  await store.migrate();
});
afterAll(async () => {
  await dropSchema(pool, schema);
  await pool.end();
});

describeStoreContract("postgres", async () => {
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_resource_permit, "${schema}".scheduler_rate_limit CASCADE`,
  );
  return { store };
});

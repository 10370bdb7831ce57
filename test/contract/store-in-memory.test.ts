/** The store contract against the in-memory twin (test/helpers/in-memory-store.ts). */
import { ManualClock } from "../../src/core/clock.js";
import { InMemoryJobStore } from "../helpers/in-memory-store.js";
import { describeStoreContract } from "./store-contract.js";

describeStoreContract("in-memory twin", async () => ({
  store: new InMemoryJobStore(new ManualClock(Date.parse("2030-01-01T00:00:00Z"))),
}));

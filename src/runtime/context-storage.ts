/** The AsyncLocalStorage behind JobContext.current(), in its own module so errors and context can both use it. */
import { AsyncLocalStorage } from "node:async_hooks";
import type { JobContext } from "./job-context.js";

/** @internal */
export const jobContextStorage = new AsyncLocalStorage<JobContext>();

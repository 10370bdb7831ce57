/**
 * The few places `pawl/testing` reaches into a Pawl instance: its registered job types, and the enqueue
 * methods fake() and inline() replace. Kept in one file so a change to Pawl's internals breaks here, with
 * a clear message, and nowhere else.
 */
import { PawlError } from "../core/errors.js";
import type { PawlClient } from "../api/client.js";
import { Pawl } from "../api/pawl.js";
import type { JobType } from "../node/registry.js";
import type { ResolvedRuntimeOptions } from "../input/runtime-config.js";
import type { UntypedTasks } from "../input/task-map.js";

/**
 * An instance whatever its task map: the map only types calls, so the helpers below, which make none on
 * the user's behalf, take any.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type AnyPawlClient = PawlClient<any>;
/** A node whatever its task map (see {@link AnyPawlClient}). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see AnyPawlClient
export type AnyPawl = Pawl<any>;

/** The registered types of a Pawl (an empty map for a bare PawlClient, which has no handlers). */
export function registeredTypes(client: AnyPawlClient): ReadonlyMap<string, JobType> {
  if (!(client instanceof Pawl)) return new Map();
  const types = new Map<string, JobType>();
  for (const name of client.registeredTypes) {
    const t = client.jobType(name);
    if (t) types.set(name, t);
  }
  return types;
}

/** The runtime options the node runs with (timeouts, watchdog): the ones its config resolved. */
export function runtimeOptionsOf(pawl: AnyPawl): ResolvedRuntimeOptions {
  return pawl.config.runtimeOptions;
}

/** The enqueue methods fake() and inline() replace on an instance. */
export type EnqueueMethods = Pick<PawlClient<UntypedTasks>, "enqueue" | "enqueueMany">;

const installed = new WeakMap<AnyPawlClient, string>();

/**
 * Replaces `enqueue` and `enqueueMany` on this one instance (own properties shadowing the prototype's) and
 * returns the restore function. `make` receives the methods being replaced, bound to the instance. A second
 * mode on the same instance is refused: restore the first one.
 */
export function patchEnqueue(
  client: AnyPawlClient,
  mode: string,
  make: (original: EnqueueMethods) => EnqueueMethods,
): () => void {
  const current = installed.get(client);
  if (current !== undefined) {
    throw new PawlError(
      "INVALID_STATE",
      `pawl/testing: ${current}() is already installed on this instance; restore it first`,
    );
  }
  const saved = {
    enqueue: Object.getOwnPropertyDescriptor(client, "enqueue"),
    enqueueMany: Object.getOwnPropertyDescriptor(client, "enqueueMany"),
  };
  const original: EnqueueMethods = {
    enqueue: client.enqueue.bind(client) as EnqueueMethods["enqueue"],
    enqueueMany: client.enqueueMany.bind(client),
  };
  const replacement = make(original);
  const target = client as unknown as Record<string, unknown>;
  target.enqueue = replacement.enqueue;
  target.enqueueMany = replacement.enqueueMany;
  installed.set(client, mode);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    for (const key of ["enqueue", "enqueueMany"] as const) {
      const descriptor = saved[key];
      if (descriptor) Object.defineProperty(client, key, descriptor);
      else delete target[key];
    }
    installed.delete(client);
  };
}

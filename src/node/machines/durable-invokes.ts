/**
 * Invoked promise actors as durable steps. Each promise actor the machine names in `setup({ actors })` is
 * wrapped: its promise runs through `run(key, fn)` (the job's step machinery), under a key made of the
 * invoke id and its occurrence, the how-many-th time that invoke started in the machine's life. The key is
 * allocated when the invoke starts and kept in the child's snapshot, so a restored machine (whose running
 * child xstate restarts) asks for the same key and gets the recorded result instead of running it again,
 * while a second entry into the same state gets a new key and runs anew.
 *
 * Only promise actors are wrapped; a machine's other actors (callbacks, observables, child machines) are
 * left as they are and documented as not durable.
 */
import { fromPromise, type AnyActorLogic, type AnyStateMachine } from "xstate";

/** Runs a step: the recorded result under `key`, or `fn()` recorded. */
export type StepRun = (key: string, fn: () => Promise<unknown>) => Promise<unknown>;

/** Allocates the key of an invoke that starts now (by its invoke id). */
export type KeyAllocator = (invokeId: string) => string;

interface PromiseShape {
  config: (args: Record<string, unknown>) => PromiseLike<unknown>;
}

/** Whether `logic` is xstate's promise logic: its transition settles on the promise's resolve event. */
export function isPromiseLogic(logic: AnyActorLogic): boolean {
  if (typeof (logic as Partial<PromiseShape>).config !== "function") return false;
  try {
    const marker = {};
    const next = logic.transition(
      { status: "active", output: undefined, error: undefined, input: undefined } as never,
      { type: "xstate.promise.resolve", data: marker } as never,
      {} as never,
    ) as { status?: string; output?: unknown };
    return next.status === "done" && next.output === marker;
  } catch {
    return false;
  }
}

function durable(logic: AnyActorLogic, allocate: KeyAllocator, run: StepRun): AnyActorLogic {
  const creator = (logic as unknown as PromiseShape).config;
  const wrapped = fromPromise<unknown, unknown>(({ input, self, system, signal, emit }) => {
    const key = (self.getSnapshot() as { pawlStep?: string }).pawlStep ?? self.id;
    return run(key, async () => creator({ input, self, system, signal, emit }));
  });
  return {
    ...wrapped,
    getInitialSnapshot: (scope, input) => ({
      ...wrapped.getInitialSnapshot(scope, input),
      pawlStep: allocate(scope.self.id),
    }),
  } as AnyActorLogic;
}

/** The machine with its promise actors run as durable steps. */
export function withDurableInvokes(
  machine: AnyStateMachine,
  allocate: KeyAllocator,
  run: StepRun,
): AnyStateMachine {
  const actors: Record<string, AnyActorLogic> = {};
  for (const [name, logic] of Object.entries(machine.implementations.actors)) {
    if (isPromiseLogic(logic as AnyActorLogic)) actors[name] = durable(logic as AnyActorLogic, allocate, run);
  }
  return machine.provide({ actors } as never) as AnyStateMachine;
}

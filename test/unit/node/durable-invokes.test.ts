import { describe, expect, it } from "vitest";
import {
  createActor,
  createMachine,
  fromCallback,
  fromObservable,
  fromPromise,
  fromTransition,
  setup,
} from "xstate";
import { isPromiseLogic, withDurableInvokes } from "../../../src/node/machines/durable-invokes.js";
import { machineDefinition } from "../../../src/node/machines/machine-definition.js";
import { machineVersion } from "../../../src/node/machines/machine-registry.js";

describe("durable invokes", () => {
  it.each([
    ["a promise actor", fromPromise(async () => 1), true],
    ["a callback actor", fromCallback(() => () => {}), false],
    ["a transition actor", fromTransition((s: number) => s + 1, 0), false],
    [
      "an observable actor",
      fromObservable(() => ({ subscribe: () => ({ unsubscribe() {} }) }) as never),
      false,
    ],
    ["a machine", createMachine({}), false],
  ])("isPromiseLogic: %s", (_label, logic, expected) => {
    expect(isPromiseLogic(logic as never)).toBe(expected);
  });

  it("runs each start of an invoke through the step runner under its own key; a restored child keeps its key", async () => {
    const keys: string[] = [];
    const m = setup({
      actors: { work: fromPromise(async ({ input }: { input: number }) => input * 2) },
    }).createMachine({
      id: "m",
      initial: "idle",
      context: { out: [] as number[] },
      states: {
        idle: { on: { GO: "busy" } },
        busy: {
          invoke: {
            id: "job",
            src: "work",
            input: 21,
            onDone: {
              target: "idle",
              actions: ({ context, event }) => context.out.push(event.output as number),
            },
          },
        },
      },
    });
    let n = 0;
    const durable = withDurableInvokes(
      m,
      (id) => `${id}#${++n}`,
      async (key, fn) => {
        keys.push(key);
        return fn();
      },
    );
    const actor = createActor(durable).start();
    for (let i = 0; i < 2; i++) {
      actor.send({ type: "GO" });
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(keys).toEqual(["job#1", "job#2"]);
    expect(actor.getSnapshot().context.out).toEqual([42, 42]);
    // A persisted busy snapshot restores its child with the key it was given.
    actor.send({ type: "GO" });
    const persisted = actor.getPersistedSnapshot() as unknown as {
      children: Record<string, { snapshot: { pawlStep?: string } }>;
    };
    actor.stop();
    expect(persisted.children.job?.snapshot.pawlStep).toBe("job#3");
    const restored = createActor(durable, { snapshot: persisted as never }).start();
    await new Promise((r) => setTimeout(r, 0));
    expect(keys).toEqual(["job#1", "job#2", "job#3", "job#3"]);
    restored.stop();
  });

  it("refuses inline invokes and bad versions at registration", () => {
    const inline = createMachine({
      id: "x",
      initial: "a",
      states: { a: { invoke: { src: fromPromise(async () => 1) } } },
    });
    expect(() => machineDefinition("t", inline, "1")).toThrow(/inline actor/);
    expect(machineVersion(undefined)).toBe("1");
    expect(machineVersion(3)).toBe("3");
    expect(machineVersion("2026-12.b")).toBe("2026-12.b");
    expect(() => machineVersion(-1)).toThrow(/invalid machine version/);
    expect(() => machineVersion("has space")).toThrow(/invalid machine version/);
  });
});

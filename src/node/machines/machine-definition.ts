/**
 * A registered machine as the runner needs it: the xstate machine, its version, and the plain data the
 * pure fit check reads (its state tree and the names of the actors it provides). Built once at
 * registration, where a machine that cannot be durable is refused with a clear error: an invoke whose
 * actor is written inline (a restored snapshot must find its actor by name, and the wrapper that makes it
 * a durable step wraps the actors named in `setup({ actors })`).
 */
import type { AnyStateMachine } from "xstate";
import { ValidationError } from "../../core/errors.js";
import type { StateTree } from "../../logic/machine-fit.js";

/** One registered definition of a machine job type. */
export interface MachineDefinition {
  type: string;
  version: string;
  machine: AnyStateMachine;
  /** The machine's states, for the fit check. */
  tree: StateTree;
  /** The actor names the machine provides. */
  actors: string[];
}

/** The parts of an xstate StateNode the walk reads. */
interface NodeShape {
  key: string;
  id: string;
  states: Record<string, NodeShape>;
  invoke: readonly { src: unknown; id: string }[];
}

function walk(node: NodeShape, type: string): StateTree {
  for (const inv of node.invoke) {
    if (typeof inv.src !== "string" || inv.src.startsWith("xstate.invoke.")) {
      throw new ValidationError(
        "INVALID_OPTION",
        `registerMachine("${type}"): state '${node.id}' invokes an inline actor; name it in setup({ actors }) ` +
          `and invoke it by name, so a restored machine finds it and pawl can run it as a durable step`,
      );
    }
  }
  const tree: StateTree = {};
  for (const [key, child] of Object.entries(node.states)) tree[key] = walk(child, type);
  return tree;
}

/** Builds a definition. @throws ValidationError for a machine that cannot be durable. */
export function machineDefinition(
  type: string,
  machine: AnyStateMachine,
  version: string,
): MachineDefinition {
  const root = (machine as unknown as { root: NodeShape }).root;
  return {
    type,
    version,
    machine,
    tree: walk(root, type),
    actors: Object.keys(machine.implementations.actors),
  };
}

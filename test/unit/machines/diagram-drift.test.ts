/**
 * The Mermaid state diagrams in docs/machines/ are checked against the machine definitions, so the docs
 * cannot drift from the code: every transition a diagram draws must exist in the machine, and every
 * transition the machine defines must be drawn.
 *
 * A diagram line `A --> B: LABEL` is read as (source A, event, target B). The event is the label's first
 * word (`after X` is the delay X; a label opening with `[` or `(` is an eventless `always` transition),
 * and a label that says `(targetless)` has no target. Transitions defined on a machine's root apply in
 * every state, and the diagrams draw them only from the states where they matter, so a root transition must
 * be drawn from at least one state, and a drawn one may come from any state. The polling strategy is a
 * `fromTransition` reducer without states and has no diagram to check here. The job task is a state table
 * (src/machines/job-task-machine.ts) run by its own small reducer; its edges are read from the table.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { AnyStateMachine } from "xstate";
import { breakerMachine } from "../../../src/machines/breaker-machine.js";
import { jobTaskTable } from "../../../src/machines/job-task-machine.js";
import { nodeMachine } from "../../../src/machines/node-machine.js";
import { pollerMachine } from "../../../src/machines/poller-machine.js";
import { watchdogMachine } from "../../../src/machines/watchdog-machine.js";

/** One edge: `source|event|target`, with `-` as the target of a targetless transition. */
type Edge = string;

interface Diagram {
  initial: string | undefined;
  states: Set<string>;
  edges: Set<Edge>;
}

/** The event a diagram label names. */
function labelEvent(label: string): string {
  const text = label.trim();
  if (text === "" || text.startsWith("[") || text.startsWith("(")) return "always";
  const after = /^after\s+([A-Za-z0-9_]+)/.exec(text);
  if (after) return `after:${after[1]}`;
  return text.split(/[\s/[(]/)[0] ?? text;
}

/** Reads the first `stateDiagram-v2` block of a docs page. */
export function parseDiagram(markdown: string): Diagram {
  const block = /```mermaid\s*\nstateDiagram-v2\n([\s\S]*?)```/.exec(markdown);
  if (!block?.[1]) throw new Error("no stateDiagram-v2 block");
  const diagram: Diagram = { initial: undefined, states: new Set(), edges: new Set() };
  for (const raw of block[1].split("\n")) {
    const line = /^\s*(\[\*\]|[A-Za-z_][\w]*)\s*-->\s*(\[\*\]|[A-Za-z_][\w]*)\s*(?::\s*(.*))?$/.exec(raw);
    if (!line) continue;
    const [, from, to, label = ""] = line as unknown as [string, string, string, string | undefined];
    if (from === "[*]") {
      diagram.initial = to;
      diagram.states.add(to);
      continue;
    }
    diagram.states.add(from);
    if (to === "[*]") continue;
    diagram.states.add(to);
    const target = /\(targetless\)/.test(label) ? "-" : to;
    diagram.edges.add(`${from}|${labelEvent(label)}|${target}`);
  }
  return diagram;
}

/** The event name a machine transition is keyed by, in the diagrams' vocabulary. */
function machineEvent(key: string): string {
  const after = /^xstate\.after\.([^.]+)\./.exec(key);
  return after ? `after:${after[1]}` : key;
}

interface MachineEdges {
  initial: string | undefined;
  states: Set<string>;
  /** Transitions defined by a state itself. */
  own: Set<Edge>;
  /** Transitions defined on the root, as `event|target`. */
  root: Set<string>;
}

function targetsOf(def: { target?: readonly { key: string }[] | undefined }): string[] {
  return def.target && def.target.length > 0 ? def.target.map((t) => t.key) : ["-"];
}

/** Lists a flat machine's states and transitions from its definition. */
export function machineEdges(machine: AnyStateMachine): MachineEdges {
  const out: MachineEdges = {
    initial: machine.root.initial?.target?.[0]?.key,
    states: new Set(),
    own: new Set(),
    root: new Set(),
  };
  for (const [event, defs] of machine.root.transitions)
    for (const def of defs) for (const t of targetsOf(def)) out.root.add(`${machineEvent(event)}|${t}`);
  for (const [name, node] of Object.entries(machine.root.states)) {
    out.states.add(name);
    for (const [event, defs] of node.transitions) {
      // A state inherits its root's transitions in `transitions`; those are checked as root edges.
      if (machine.root.transitions.has(event) && !Object.hasOwn(node.config.on ?? {}, event)) continue;
      for (const def of defs)
        for (const t of targetsOf(def)) out.own.add(`${name}|${machineEvent(event)}|${t}`);
    }
    for (const def of node.always ?? []) for (const t of targetsOf(def)) out.own.add(`${name}|always|${t}`);
  }
  return out;
}

/** Lists the job task's states and transitions from its table, in the same form as {@link machineEdges}. */
export function tableEdges(table: typeof jobTaskTable): MachineEdges {
  const out: MachineEdges = { initial: table.initial, states: new Set(), own: new Set(), root: new Set() };
  for (const [name, def] of Object.entries(table.states)) {
    out.states.add(name);
    for (const [event, list] of Object.entries(def.on ?? {}))
      for (const t of list ?? []) out.own.add(`${name}|${event}|${t.target ?? "-"}`);
    for (const t of def.always ?? []) out.own.add(`${name}|always|${t.target ?? "-"}`);
  }
  return out;
}

const cases: [string, AnyStateMachine | typeof jobTaskTable][] = [
  ["breaker.md", breakerMachine],
  ["job-task.md", jobTaskTable],
  ["node.md", nodeMachine],
  ["poller.md", pollerMachine],
  ["watchdog.md", watchdogMachine],
];

describe("machine diagrams in docs/machines match the machine definitions", () => {
  it.each(cases)("%s", (page, machine) => {
    const doc = parseDiagram(
      readFileSync(new URL(`../../../docs/machines/${page}`, import.meta.url), "utf8"),
    );
    const m = "root" in machine ? machineEdges(machine) : tableEdges(machine);
    expect(doc.initial).toBe(m.initial);
    expect([...doc.states].sort()).toEqual([...m.states].sort());

    const drawnRoot = new Set<string>();
    const notInMachine: string[] = [];
    for (const edge of doc.edges) {
      if (m.own.has(edge)) continue;
      const [, event, target] = edge.split("|");
      const rootKey = `${event}|${target}`;
      if (m.root.has(rootKey)) drawnRoot.add(rootKey);
      else notInMachine.push(edge);
    }
    expect(notInMachine, "drawn but not in the machine").toEqual([]);
    expect(
      [...m.own].filter((e) => !doc.edges.has(e)),
      "in the machine but not drawn",
    ).toEqual([]);
    expect(
      [...m.root].filter((e) => !drawnRoot.has(e)),
      "root transitions never drawn",
    ).toEqual([]);
  });

  it("notices a drawn transition the machine lacks, and one it has that is not drawn", () => {
    const doc = parseDiagram("```mermaid\nstateDiagram-v2\n  [*] --> a\n  a --> b: GO [ready]\n```\n");
    expect(doc.edges).toEqual(new Set(["a|GO|b"]));
    const page = readFileSync(new URL("../../../docs/machines/poller.md", import.meta.url), "utf8");
    const planted = page.replace("  draining --> stopped: STOP\n", "  draining --> polling: STOP\n");
    expect(planted).not.toBe(page);
    const m = machineEdges(pollerMachine);
    const drawn = parseDiagram(planted).edges;
    expect(drawn.has("draining|STOP|polling") && !m.own.has("draining|STOP|polling")).toBe(true);
    expect([...m.own].filter((e) => !drawn.has(e))).toEqual(["draining|STOP|stopped"]);
  });
});

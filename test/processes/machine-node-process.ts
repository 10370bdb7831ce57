/**
 * One pawl node running durable machines, as its own process, for test/processes/machines.test.ts (run
 * with node_modules/.bin/tsx). It registers `counter` (collects `EV` events until it has `input.total` of
 * them, then ends with the list as its output) and `timer` (ends when its `input.ms` `after` delay fires).
 * It prints `{"event":"ready","pid":...}` once started; an unhandled rejection or uncaught exception is
 * printed as a `fatal` line on stderr and exits 70.
 *
 * Environment: DATABASE_URL, PAWL_SCHEMA, PAWL_NODE_ID (read by createPawl), NODE_OPTIONS_JSON (extra
 * createPawl options).
 */
import { assign, setup } from "xstate";
import { consoleLogger, createPawl, type PawlConfig } from "../../src/index.js";

const fatal = (kind: string) => (error: unknown) => {
  process.stderr.write(
    JSON.stringify({ event: "fatal", kind, error: String((error as Error)?.stack ?? error) }) + "\n",
  );
  process.exit(70);
};
process.on("unhandledRejection", fatal("unhandledRejection"));
process.on("uncaughtException", fatal("uncaughtException"));

const counter = setup({
  types: {} as {
    input: { total: number };
    context: { seen: string[]; total: number };
    events: { type: "EV"; n: string };
  },
}).createMachine({
  id: "counter",
  context: ({ input }) => ({ seen: [], total: input.total }),
  initial: "counting",
  states: {
    counting: {
      always: { guard: ({ context }) => context.seen.length >= context.total, target: "done" },
      on: { EV: { actions: assign({ seen: ({ context, event }) => [...context.seen, event.n] }) } },
    },
    done: { type: "final" },
  },
  output: ({ context }) => context.seen,
});

const timer = setup({
  types: {} as { input: { ms: number }; context: { ms: number } },
  delays: { wait: ({ context }) => context.ms },
}).createMachine({
  id: "timer",
  context: ({ input }) => ({ ms: input.ms }),
  initial: "waiting",
  states: { waiting: { after: { wait: "fired" } }, fired: { type: "final" } },
  output: () => "fired",
});

const options = JSON.parse(process.env.NODE_OPTIONS_JSON ?? "{}") as PawlConfig;
const pawl = createPawl({ logger: consoleLogger("error"), ...options });
pawl.on("error", () => {}); // reported faults (a database restart) are expected here
pawl.registerMachine("counter", counter);
pawl.registerMachine("timer", timer);
await pawl.start();
process.stdout.write(JSON.stringify({ event: "ready", pid: process.pid }) + "\n");
process.on("SIGTERM", () => {
  void pawl
    .stop({ graceMs: 2000 })
    .then(() => pawl.close())
    .then(() => process.exit(0));
});

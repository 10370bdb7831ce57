/**
 * The machines the durable-machine tests run: an order with a payment (an invoked promise actor), a
 * payment timeout (`after`) that cancels it, and an ignored-event case; built per test with the test's
 * own actor implementations, so each test counts and gates its side effects.
 */
import { assign, fromPromise, setup } from "xstate";

/** What an order machine's payment does (the durable step). */
export type Charge = (input: {
  orderId: string;
  amount: number;
  attempt: number;
}) => Promise<{ receipt: string }>;

/** An order: awaitingPayment -(PAY)-> charging -(done)-> paid -(SHIP)-> shipped (final); times out to canceled. */
export function orderMachine(charge: Charge, options: { timeoutMs?: number; onError?: boolean } = {}) {
  return setup({
    types: {} as {
      input: { orderId: string; amount: number };
      context: { orderId: string; amount: number; receipt: string | null; tries: number; notes: string[] };
      events:
        | { type: "PAY" }
        | { type: "SHIP"; carrier: string }
        | { type: "NOTE"; text: string }
        | { type: "CANCEL" };
    },
    actors: {
      charge: fromPromise(
        async ({ input }: { input: { orderId: string; amount: number; attempt: number } }) => charge(input),
      ),
    },
  }).createMachine({
    id: "order",
    context: ({ input }) => ({ ...input, receipt: null, tries: 0, notes: [] }),
    initial: "awaitingPayment",
    on: { NOTE: { actions: assign({ notes: ({ context, event }) => [...context.notes, event.text] }) } },
    states: {
      awaitingPayment: {
        on: { PAY: "charging", CANCEL: "canceled" },
        after: { [options.timeoutMs ?? 3_600_000]: "canceled" },
      },
      charging: {
        entry: assign({ tries: ({ context }) => context.tries + 1 }),
        invoke: {
          id: "payment",
          src: "charge",
          input: ({ context }) => ({
            orderId: context.orderId,
            amount: context.amount,
            attempt: context.tries,
          }),
          onDone: { target: "paid", actions: assign({ receipt: ({ event }) => event.output.receipt }) },
          ...(options.onError ? { onError: "awaitingPayment" } : {}),
        },
      },
      paid: { on: { SHIP: "shipped" } },
      shipped: { type: "final" },
      canceled: { type: "final" },
    },
    output: ({ context }) => ({ orderId: context.orderId, receipt: context.receipt, notes: context.notes }),
  });
}

/**
 * A payment held until `release()`, for a test that needs a machine running on its node (in its invoke):
 * `charged` resolves when the first payment starts; each payment's receipt is `r-<orderId>`.
 */
export function heldCharge(): { charge: Charge; charged: Promise<void>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let charging!: () => void;
  const charged = new Promise<void>((r) => (charging = r));
  const charge: Charge = async ({ orderId }) => {
    charging();
    await gate;
    return { receipt: `r-${orderId}` };
  };
  return { charge, charged, release };
}

/**
 * The order lifecycle of the durable-machine example, as an xstate v5 machine. Its side effects are the
 * two named promise actors (`charge`, `ship`), which pawl runs as durable steps; its waits (for payment,
 * for delivery) and its payment timeout are what pawl persists while the order's job is parked.
 *
 *   awaitingPayment --PAY--> charging --done--> shipping --done--> inTransit --DELIVERED--> delivered (final)
 *         |  ^                  |
 *         |  +----declined------+   (up to 3 tries, then canceled)
 *         +--after paymentTimeoutMs--> canceled (final)
 */
import { assign, fromPromise, setup } from "xstate";

/** The order a job starts with (its payload, the machine's input). */
export interface OrderInput {
  orderId: string;
  amount: number;
  paymentTimeoutMs: number;
}

/** The outside world the machine calls (a payment provider and a carrier). */
export interface OrderServices {
  chargeCard(input: { orderId: string; amount: number; attempt: number }): Promise<{ paymentId: string }>;
  createShipment(input: { orderId: string }): Promise<{ trackingId: string }>;
}

/** The order machine over `services`. */
export function orderMachine(services: OrderServices) {
  return setup({
    types: {} as {
      input: OrderInput;
      context: OrderInput & {
        tries: number;
        paymentId: string | null;
        trackingId: string | null;
        why: string | null;
      };
      events: { type: "PAY" } | { type: "DELIVERED" } | { type: "CANCEL" };
      output: { orderId: string; paymentId: string | null; trackingId: string | null; why: string | null };
    },
    actors: {
      charge: fromPromise(({ input }: { input: { orderId: string; amount: number; attempt: number } }) =>
        services.chargeCard(input),
      ),
      ship: fromPromise(({ input }: { input: { orderId: string } }) => services.createShipment(input)),
    },
    delays: { paymentTimeout: ({ context }) => context.paymentTimeoutMs },
    guards: { triesLeft: ({ context }) => context.tries < 3 },
  }).createMachine({
    id: "order",
    context: ({ input }) => ({ ...input, tries: 0, paymentId: null, trackingId: null, why: null }),
    initial: "awaitingPayment",
    states: {
      awaitingPayment: {
        on: {
          PAY: "charging",
          CANCEL: { target: "canceled", actions: assign({ why: "canceled by the customer" }) },
        },
        after: { paymentTimeout: { target: "canceled", actions: assign({ why: "payment timed out" }) } },
      },
      charging: {
        entry: assign({ tries: ({ context }) => context.tries + 1 }),
        invoke: {
          src: "charge",
          id: "charge",
          input: ({ context }) => ({
            orderId: context.orderId,
            amount: context.amount,
            attempt: context.tries,
          }),
          onDone: {
            target: "shipping",
            actions: assign({ paymentId: ({ event }) => event.output.paymentId }),
          },
          onError: [
            { guard: "triesLeft", target: "awaitingPayment" },
            { target: "canceled", actions: assign({ why: "card declined 3 times" }) },
          ],
        },
      },
      shipping: {
        invoke: {
          src: "ship",
          id: "ship",
          input: ({ context }) => ({ orderId: context.orderId }),
          onDone: {
            target: "inTransit",
            actions: assign({ trackingId: ({ event }) => event.output.trackingId }),
          },
        },
      },
      inTransit: { on: { DELIVERED: "delivered" } },
      delivered: { type: "final" },
      canceled: { type: "final" },
    },
    output: ({ context }) => ({
      orderId: context.orderId,
      paymentId: context.paymentId,
      trackingId: context.trackingId,
      why: context.why,
    }),
  });
}

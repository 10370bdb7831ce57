/**
 * The concurrency options every door that creates jobs must refuse (issue 27, src/input/concurrency-input.ts):
 * each is a `ValidationError` with code `INVALID_OPTION` and a message matching `message`, thrown before
 * anything is written. The flow, schedule and pawl/testing tests run their entry points over this one table.
 */

/** One refused pair of options, with what the message must say. */
export interface BadConcurrency {
  /** For the test's title. */
  name: string;
  options: { concurrencyKey?: unknown; concurrencyLimit?: unknown };
  message: RegExp;
}

/** Bad keys and limits: an empty key, a 10 kB key, a key that is not a string, limits 0, -1, 1.5 and too large, a limit without a key. */
export const badConcurrency: readonly BadConcurrency[] = [
  { name: "an empty key", options: { concurrencyKey: "" }, message: /invalid concurrencyKey/ },
  {
    name: "a 10 kB key",
    options: { concurrencyKey: "k".repeat(10_240), concurrencyLimit: 2 },
    message: /invalid concurrencyKey .*1-500 characters/,
  },
  { name: "a key that is not a string", options: { concurrencyKey: 42 }, message: /concurrencyKey/ },
  {
    name: "limit 0",
    options: { concurrencyKey: "k", concurrencyLimit: 0 },
    message: /invalid concurrencyLimit 0/,
  },
  {
    name: "limit -1",
    options: { concurrencyKey: "k", concurrencyLimit: -1 },
    message: /invalid concurrencyLimit -1/,
  },
  {
    name: "limit 1.5",
    options: { concurrencyKey: "k", concurrencyLimit: 1.5 },
    message: /invalid concurrencyLimit 1\.5/,
  },
  {
    name: "limit 100,001",
    options: { concurrencyKey: "k", concurrencyLimit: 100_001 },
    message: /invalid concurrencyLimit 100001/,
  },
  {
    name: "a limit without a key",
    options: { concurrencyLimit: 2 },
    message: /concurrencyLimit needs a concurrencyKey/,
  },
];

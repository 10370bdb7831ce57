/**
 * Typed jobs: `expectTypeOf` assertions (checked by `npm run typecheck`, which includes this file; at run
 * time they are no-ops), and the Standard Schema normalisation as plain functions.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import type {
  EnqueuedJob,
  FlowCompletion,
  Pawl,
  PawlClient,
  TaskName,
  TypedJob,
} from "../../../src/index.js";
import { isStandardSchema, schemaValidator } from "../../../src/core/standard-schema.js";
import { resolveJobType } from "../../../src/node/registry.js";
import type { JobContext } from "../../../src/node/attempt/job-context.js";
import type { EnqueueRecorder } from "../../../src/testing/index.js";

type Tasks = {
  "email.send": { payload: { to: string }; result: { messageId: string } };
  "cache.flush": { payload: undefined };
  "import.done": { payload: FlowCompletion<{ file: string }> };
};

// Types only: never read at run time (expectTypeOf on a type argument does not touch a value).
declare const _pawl: Pawl<Tasks>;
declare const untyped: Pawl;
declare const _client: PawlClient;
declare const _recorderOf: EnqueueRecorder<Tasks>;

describe("task map types", () => {
  it("gives enqueue, getJob and the recorder the map's payload and result", () => {
    expectTypeOf<TaskName<Tasks>>().toEqualTypeOf<"email.send" | "cache.flush" | "import.done">();
    type Enqueue = typeof _pawl.enqueue<unknown, "email.send">;
    expectTypeOf<Parameters<Enqueue>[0]>().toEqualTypeOf<"email.send">();
    expectTypeOf<Parameters<Enqueue>[1]>().toEqualTypeOf<{ to: string }>();
    expectTypeOf<Awaited<ReturnType<Enqueue>>>().toEqualTypeOf<EnqueuedJob<{ to: string }, "email.send">>();
    type GetJob = typeof _pawl.getJob<"email.send">;
    expectTypeOf<Awaited<ReturnType<GetJob>>>().toEqualTypeOf<TypedJob<Tasks, "email.send"> | null>();
    expectTypeOf<TypedJob<Tasks, "email.send">["result"]>().toEqualTypeOf<{ messageId: string } | null>();
    expectTypeOf<TypedJob<Tasks, "email.send">["payload"]>().toEqualTypeOf<{ to: string }>();
    expectTypeOf<TypedJob<Tasks>["type"]>().toEqualTypeOf<"email.send" | "cache.flush" | "import.done">();
    type Recorded = ReturnType<EnqueueRecorder<Tasks>["enqueuedOf"]>[number];
    expectTypeOf<Recorded["payload"]>().toEqualTypeOf<
      { to: string } | undefined | FlowCompletion<{ file: string }>
    >();
    type RecordedEmail = ReturnType<typeof _recorderOf.enqueuedOf<"email.send">>[number];
    expectTypeOf<RecordedEmail["payload"]>().toEqualTypeOf<{ to: string }>();
  });

  it("types a register handler's payload and return from the map, and from a schema without one", () => {
    type EmailHandler = Parameters<typeof _pawl.register<unknown, unknown, "email.send">>[1];
    expectTypeOf<EmailHandler>().parameter(0).toEqualTypeOf<{ to: string }>();
    expectTypeOf<EmailHandler>().returns.toEqualTypeOf<
      { messageId: string } | Promise<{ messageId: string }>
    >();

    const schema = z.object({ a: z.number(), tags: z.array(z.string()) });
    // The schema's type reaches the handler (typechecked; never called, there is no instance).
    const check = () =>
      untyped.register(
        "schema.typed",
        (p, ctx) => {
          expectTypeOf(p).toEqualTypeOf<{ a: number; tags: string[] }>();
          expectTypeOf(ctx).toEqualTypeOf<JobContext>();
          return p.a;
        },
        { validate: schema },
      );
    expectTypeOf(check).returns.toEqualTypeOf<Pawl>();
  });

  it("leaves an instance without a map untyped", () => {
    expectTypeOf<TaskName<object>>().toEqualTypeOf<string>();
    type Enqueue = typeof _client.enqueue<{ n: number }>;
    expectTypeOf<Parameters<Enqueue>[0]>().toEqualTypeOf<string>();
    expectTypeOf<Awaited<ReturnType<Enqueue>>>().toEqualTypeOf<EnqueuedJob<{ n: number }>>();
    expectTypeOf<Awaited<ReturnType<typeof _client.getJob>>>().toEqualTypeOf<TypedJob<
      object,
      string
    > | null>();
    expectTypeOf<TypedJob<object, string>["result"]>().toEqualTypeOf<unknown>();
  });
});

describe("Standard Schema validators", () => {
  const schema = z.object({ to: z.string(), n: z.number().int().optional() });

  it("recognises a schema (object or callable) and nothing else", () => {
    expect(isStandardSchema(schema)).toBe(true);
    const callable = Object.assign(() => true, {
      "~standard": { version: 1, vendor: "x", validate: () => ({ value: 1 }) },
    });
    expect(isStandardSchema(callable)).toBe(true);
    expect(isStandardSchema(() => true)).toBe(false);
    expect(isStandardSchema({ "~standard": {} })).toBe(false);
    expect(isStandardSchema(null)).toBe(false);
  });

  it("passes a good payload and names each issue's path for a bad one", () => {
    const validate = schemaValidator(schema);
    expect(validate({ to: "a", n: 2 })).toBeUndefined();
    expect(validate({ to: 1, n: 1.5 })).toMatch(/^to: .+; n: .+/);
    expect(validate("x")).toBeTypeOf("string");
  });

  it("caps the issues it lists", () => {
    const wide = z.object(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, z.string()])));
    expect(schemaValidator(wide)({})).toMatch(/\(and 3 more\)$/);
  });

  it("rejects an asynchronous answer instead of awaiting it", async () => {
    const asyncSchema = z.string().refine(async () => false);
    expect(schemaValidator(asyncSchema)("x")).toMatch(/asynchronously/);
  });

  it("is what register normalises validate to, so every path runs a function", () => {
    const t = resolveJobType("typed.unit", () => 1, { validate: schema });
    expect(typeof t.validate).toBe("function");
    expect(t.validate?.({ to: 1 })).toMatch(/^to: /);
    const fn = (p: unknown) => p !== null;
    expect(resolveJobType("typed.fn", () => 1, { validate: fn }).validate).toBe(fn);
  });
});

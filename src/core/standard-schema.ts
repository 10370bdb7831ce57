/**
 * Standard Schema (standardschema.dev, v1) as pawl reads it: the structural interface that zod, valibot,
 * arktype and others implement, so a schema from any of them can be a job type's `validate` without pawl
 * depending on any of them, nor on `@standard-schema/spec`, at run time or in its types (the spec invites
 * libraries to carry the interface themselves). Only the parts pawl uses are declared.
 */

/** One problem a schema found in a value. */
export interface StandardSchemaIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** What a schema's `validate` returns: the value when it passed, the issues when it did not. */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardSchemaIssue> };

/**
 * A Standard Schema v1: any object (or function, as arktype's types are) with a `~standard` property.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * const schema: StandardSchema<{ to: string }> = z.object({ to: z.string() });
 * ```
 */
export interface StandardSchema<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
    /** Carries the types only; libraries leave it undefined at run time. */
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/**
 * The type a schema accepts: what enqueue must pass and what the handler receives. pawl stores the payload
 * as given (the schema checks it, it does not transform it), so this is the schema's input type.
 *
 * @example
 * ```ts
 * type Email = InferSchemaInput<typeof emailSchema>; // { to: string }
 * ```
 */
export type InferSchemaInput<S> = S extends StandardSchema<infer I, unknown> ? I : unknown;

/** Whether `value` is a Standard Schema (checked before "is it a function", since arktype's types are both). */
export function isStandardSchema(value: unknown): value is StandardSchema {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const props = (value as { "~standard"?: unknown })["~standard"];
  return (
    typeof props === "object" &&
    props !== null &&
    typeof (props as { validate?: unknown }).validate === "function"
  );
}

const maxIssues = 5;

function describeIssue(issue: StandardSchemaIssue): string {
  const path = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".");
  return path === "" ? issue.message : `${path}: ${issue.message}`;
}

/**
 * Turns a Standard Schema into pawl's validator function: an issue list becomes the rejection message.
 * Validators run synchronously, in the one path that enqueue, enqueueMany, flows, schedules and the
 * attempt's payload check share (a batch validates up to a million items in it), so a schema that answers
 * with a Promise (an async refinement) rejects the payload with a message that says so rather than being
 * awaited.
 *
 * @example
 * ```ts
 * const validate = schemaValidator(z.object({ to: z.string() }));
 * validate({ to: 1 }); // "to: Invalid input: expected string, received number"
 * ```
 */
export function schemaValidator(schema: StandardSchema): (payload: unknown) => string | undefined {
  const validate = schema["~standard"].validate.bind(schema["~standard"]);
  return (payload) => {
    const result = validate(payload);
    if (typeof (result as { then?: unknown }).then === "function") {
      // Nobody awaits it: keep a rejection from surfacing as an unhandled one.
      (result as Promise<unknown>).then(undefined, () => {});
      return `the ${schema["~standard"].vendor} schema validates asynchronously; pawl runs validators synchronously (at enqueue and before each attempt): use a schema without async checks`;
    }
    const { issues } = result as StandardSchemaResult<unknown>;
    if (!issues) return undefined;
    const shown = issues.slice(0, maxIssues).map(describeIssue).join("; ");
    const more = issues.length > maxIssues ? ` (and ${issues.length - maxIssues} more)` : "";
    return (shown || "the schema rejected it") + more;
  };
}

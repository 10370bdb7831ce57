/**
 * The error a call throws, asserted to be a {@link ValidationError}: for table-driven tests of the pure
 * resolvers, which check the code and the message of what was refused.
 */
import { expect } from "vitest";
import { ValidationError } from "../../src/core/errors.js";

/**
 * Calls `fn` and returns the ValidationError it threw.
 *
 * @throws the assertion failure when it threw something else, or an Error when it threw nothing.
 */
export function thrown(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError, nothing was thrown");
}

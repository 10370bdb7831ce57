/** The shared check for integer options, so every config error reads the same way. */
import { describeValue } from "../core/input-text.js";
import { ValidationError } from "../core/errors.js";

/** Checks an integer option, naming it in the error. */
export function intOption(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid ${name} ${describeValue(value)}: use an integer from ${min} to ${max}`,
    );
  }
  return value;
}

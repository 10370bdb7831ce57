/**
 * The one config reader of the pure modules: rejects unknown keys and non-finite numbers with a message
 * naming the field, then fills in the defaults.
 */
import { ValidationError } from "../core/errors.js";

/** Rejects unknown keys and non-finite numbers, then fills in the defaults. */
export function readNumbers<T extends object>(name: string, defaults: T, partial: unknown): T {
  if (partial === undefined || partial === null) return { ...defaults };
  if (typeof partial !== "object" || Array.isArray(partial)) {
    throw new ValidationError("INVALID_CONFIG", `${name} must be an object, got ${describe(partial)}`);
  }
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(defaults));
  for (const [key, value] of Object.entries(partial)) {
    if (!Object.hasOwn(defaults, key)) {
      const known = Object.keys(defaults).join(", ");
      throw new ValidationError("INVALID_CONFIG", `${name}.${key} is not a known option (known: ${known})`);
    }
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new ValidationError(
        "INVALID_CONFIG",
        `${name}.${key} must be a finite number, got ${describe(value)}`,
      );
    }
    out[key] = value;
  }
  return out as T;
}

/** Quotes strings and stringifies the rest, for error messages. */
export function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

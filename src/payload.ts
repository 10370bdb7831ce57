/**
 * Payload checks. A payload is stored as jsonb, so it must survive JSON unchanged: plain objects, arrays,
 * strings, finite numbers, booleans and null. Anything JSON.stringify would silently alter (undefined,
 * NaN, Dates, class instances, functions) is refused with the path to the bad value.
 */
import { ValidationError } from "./errors.js";

/** The default payload limit: 256 KiB of UTF-8 JSON. */
export const defaultMaxPayloadBytes = 256 * 1024;

function check(value: unknown, path: string, seen: Set<object>): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw bad(path, `${value} is not a finite number`);
    return;
  }
  if (typeof value !== "object") throw bad(path, `a ${typeof value} is not JSON`);
  if (seen.has(value)) throw bad(path, "it is circular");
  seen.add(value);
  if (Array.isArray(value)) {
    value.forEach((v, i) => check(v, `${path}[${i}]`, seen));
  } else {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      throw bad(
        path,
        `a ${(value as object).constructor?.name ?? "non-plain object"} is not a plain JSON object`,
      );
    }
    for (const [k, v] of Object.entries(value)) check(v, `${path}.${k}`, seen);
  }
  seen.delete(value);
}

function bad(path: string, why: string): ValidationError {
  return new ValidationError("INVALID_PAYLOAD", `payload is not JSON at ${path}: ${why}`);
}

/**
 * Validates a payload and returns its JSON text.
 *
 * @throws ValidationError `INVALID_PAYLOAD` or `PAYLOAD_TOO_LARGE`.
 */
export function serializePayload(payload: unknown, maxBytes: number = defaultMaxPayloadBytes): string {
  check(payload, "$", new Set());
  const text = JSON.stringify(payload);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw new ValidationError(
      "PAYLOAD_TOO_LARGE",
      `payload is ${bytes} bytes of JSON, over the limit of ${maxBytes} (maxPayloadBytes)`,
    );
  }
  return text;
}

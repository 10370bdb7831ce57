/**
 * Payload checks. A payload is stored as jsonb, so it must survive JSON unchanged: plain objects, arrays,
 * strings, finite numbers, booleans and null, nested at most {@link maxPayloadDepth} deep. Anything
 * JSON.stringify would silently alter (undefined, NaN, Dates, class instances, functions, holes in
 * arrays) or PostgreSQL would refuse (NUL, lone surrogates, in values or keys) is refused with the path
 * to the bad value. The walk is iterative, so no nesting depth can overflow the stack before the depth
 * limit is reported.
 */
import { ValidationError } from "../core/errors.js";
import { textProblem } from "../core/input-text.js";

/** The default payload limit: 256 KiB of UTF-8 JSON. */
export const defaultMaxPayloadBytes = 256 * 1024;

/**
 * The deepest nesting of arrays and objects a payload may have (`[[1]]` is 2 deep). Far beyond what real
 * payloads need, and well inside what PostgreSQL's jsonb parser and JSON.stringify handle on their stacks.
 */
export const maxPayloadDepth = 100;

/** One value still to check: the path to it is rebuilt from the parent chain only for an error message. */
interface Frame {
  value: unknown;
  parent: Frame | null;
  key: string | number | null;
  depth: number;
}

const identifier = /^[A-Za-z_$][\w$]*$/;

function pathOf(frame: Frame | null): string {
  const parts: string[] = [];
  for (let f = frame; f !== null && f.key !== null; f = f.parent) {
    const k = f.key;
    parts.push(typeof k === "number" ? `[${k}]` : identifier.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);
  }
  return "$" + parts.reverse().join("");
}

function bad(frame: Frame | null, why: string): ValidationError {
  return new ValidationError("INVALID_PAYLOAD", `payload is not JSON at ${pathOf(frame)}: ${why}`);
}

/**
 * Checks that `payload` survives a round trip through jsonb unchanged.
 *
 * @throws ValidationError `INVALID_PAYLOAD` naming the path to the first bad value.
 */
export function checkPayload(payload: unknown): void {
  const stack: Frame[] = [{ value: payload, parent: null, key: null, depth: 0 }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const value = frame.value;
    if (value === null || typeof value === "boolean") continue;
    if (typeof value === "string") {
      const problem = textProblem(value);
      if (problem !== null) throw bad(frame, problem);
      continue;
    }
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw bad(frame, `${value} is not a finite number`);
      continue;
    }
    if (typeof value !== "object") throw bad(frame, `a ${typeof value} is not JSON`);
    // A container that is its own ancestor is a cycle, while the same object reached twice through
    // different branches (a DAG) is fine, as JSON.stringify writes it twice. The ancestors are the parent
    // chain, at most maxPayloadDepth long; walking it allocates nothing, where a set of the containers on
    // the path cost every payload a Set and a second visit of each container.
    for (let up = frame.parent; up !== null; up = up.parent) {
      if (up.value === value) throw bad(frame, "it is circular");
    }
    const depth = frame.depth + 1;
    if (depth > maxPayloadDepth) throw bad(frame, `it is nested deeper than ${maxPayloadDepth} levels`);
    if (Array.isArray(value)) {
      // Pushed last-first so elements are checked in order (a hole is found as it is pushed).
      for (let i = value.length - 1; i >= 0; i--) {
        if (!(i in value)) {
          throw bad(frame, `index ${i} is a hole (a sparse array would be stored with null there)`);
        }
        stack.push({ value: value[i] as unknown, parent: frame, key: i, depth });
      }
      continue;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
      throw bad(
        frame,
        `a ${typeof name === "string" ? name : "non-plain object"} is not a plain JSON object`,
      );
    }
    const keys = Object.keys(value);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      const problem = textProblem(k);
      if (problem !== null) throw bad(frame, `the key ${JSON.stringify(k)}: ${problem}`);
      stack.push({ value: (value as Record<string, unknown>)[k], parent: frame, key: k, depth });
    }
  }
}

/**
 * Validates a payload and returns its JSON text.
 *
 * @throws ValidationError `INVALID_PAYLOAD` or `PAYLOAD_TOO_LARGE`.
 */
export function serializePayload(payload: unknown, maxBytes: number = defaultMaxPayloadBytes): string {
  checkPayload(payload);
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

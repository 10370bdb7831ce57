/**
 * What a handler threw, described for the job's error record. A handler may throw anything: an Error, a
 * string, a number, `undefined`, a plain object with a cycle, an object whose getters or `toString`
 * throw, a Proxy that throws on every trap. The description keeps what can be kept and never throws:
 *
 * - `name`: an Error's `name`, or a thrown object's own string `name`; otherwise `NonErrorThrown`.
 * - `message`: an Error's (or object's) string `message`; a thrown string itself; otherwise
 *   `non-error thrown: ` and a safe rendering of the value (`42`, `null`, `10n`, `{"a":1}`).
 * - `stack`: an Error's string `stack`.
 * - `details`: the value's own enumerable fields other than name, message and stack, plus an Error's
 *   `cause` (own but not enumerable when given to the constructor), copied into a plain JSON tree: a
 *   cycle becomes `"[Circular]"`, a getter that throws `"[Unreadable]"`, a BigInt its digits and `n`, a
 *   function `"[Function name]"`, and the tree is bounded in depth, fields and total size.
 *
 * Pure: reads only the value. Sanitising the texts for storage is left to `errorRecordJson`.
 */

/** A thrown value, as it is recorded. */
export interface ThrownDescription {
  name: string;
  message: string;
  stack?: string;
  details?: Record<string, unknown>;
}

/** The bounds of the details tree: nesting, fields per object or array, nodes overall, string length. */
export const detailsLimits = { depth: 4, fields: 50, nodes: 500, string: 1000 } as const;

/** Reads `o[key]`, or `undefined` when that throws (a getter, a Proxy trap). */
function read(o: object, key: PropertyKey): { ok: boolean; value?: unknown } {
  try {
    return { ok: true, value: (o as Record<PropertyKey, unknown>)[key] };
  } catch {
    return { ok: false };
  }
}

/** `value instanceof Error`, or false when even that throws (a Proxy's getPrototypeOf trap). */
export function isErrorSafe(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

function ownKeys(o: object): string[] {
  try {
    return Object.keys(o);
  } catch {
    return [];
  }
}

/** Copies a value into a bounded plain JSON tree (see the file's summary). */
class TreeCopier {
  private nodes = 0;
  private readonly path: object[] = [];

  copy(value: unknown, depth: number): unknown {
    if (++this.nodes > detailsLimits.nodes) return "[…]";
    switch (typeof value) {
      case "string":
        return value.length > detailsLimits.string ? value.slice(0, detailsLimits.string) + "…" : value;
      case "number":
        return Number.isFinite(value) ? value : String(value);
      case "boolean":
        return value;
      case "bigint":
        return `${value.toString()}n`;
      case "undefined":
        return "[undefined]";
      case "symbol":
        return "[Symbol]";
      case "function":
        return `[Function ${functionName(value)}]`;
    }
    if (value === null) return null;
    const o = value as object;
    if (this.path.includes(o)) return "[Circular]";
    if (isErrorSafe(o)) return this.withPath(o, () => this.errorTree(o, depth));
    if (depth >= detailsLimits.depth) return Array.isArray(o) ? "[Array]" : "[Object]";
    return this.withPath(o, () => {
      if (Array.isArray(o)) {
        const length = Math.min(read(o, "length").value as number, detailsLimits.fields);
        const out: unknown[] = [];
        for (let i = 0; i < length; i++) out.push(this.field(o, String(i), depth));
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const key of ownKeys(o).slice(0, detailsLimits.fields)) out[key] = this.field(o, key, depth);
      return out;
    });
  }

  /** An Error inside the details (a cause): its name and message, and its own fields. */
  errorTree(e: Error, depth: number): unknown {
    const name = read(e, "name").value;
    const message = read(e, "message").value;
    const tree: Record<string, unknown> = {
      name: typeof name === "string" ? name : "Error",
      message: typeof message === "string" ? message : "",
    };
    if (depth >= detailsLimits.depth) return tree;
    return { ...tree, ...this.fields(e, depth) };
  }

  /** The own enumerable fields of `o` other than name, message and stack, plus its `cause`. */
  private fields(o: object, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const keys = ownKeys(o).filter((k) => k !== "name" && k !== "message" && k !== "stack");
    let hasCause = false;
    try {
      hasCause = Object.prototype.hasOwnProperty.call(o, "cause");
    } catch {
      // a Proxy that refuses: no cause then
    }
    if (hasCause && !keys.includes("cause")) keys.push("cause");
    for (const key of keys.slice(0, detailsLimits.fields)) out[key] = this.field(o, key, depth);
    return out;
  }

  /** The fields of the thrown value itself (on the path, so a field pointing back at it is a cycle). */
  details(o: object): Record<string, unknown> {
    return this.withPath(o, () => this.fields(o, 0));
  }

  private field(o: object, key: string, depth: number): unknown {
    try {
      const r = read(o, key);
      return r.ok ? this.copy(r.value, depth + 1) : "[Unreadable]";
    } catch {
      return "[Unreadable]"; // a revoked Proxy somewhere below, say
    }
  }

  private withPath<T>(o: object, fn: () => T): T {
    this.path.push(o);
    try {
      return fn();
    } finally {
      this.path.pop();
    }
  }
}

function functionName(f: unknown): string {
  const name = read(f as object, "name").value;
  return typeof name === "string" && name !== "" ? name : "anonymous";
}

/** A one-line rendering of any value that never throws and never calls the value's own code. */
function render(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value.toString()}n`;
  if (typeof value !== "object" || value === null) {
    return typeof value === "function" ? `[Function ${functionName(value)}]` : String(value);
  }
  try {
    const text = JSON.stringify(new TreeCopier().copy(value, 0));
    return text.length > 500 ? text.slice(0, 500) + "…" : text;
  } catch {
    return "[unreadable value]";
  }
}

/**
 * Describes a thrown value for the job's error record. Never throws.
 *
 * @example
 * ```ts
 * const o: Record<string, unknown> = { message: "quota", code: 429 };
 * o.self = o;
 * describeThrown(o);
 * // { name: "NonErrorThrown", message: "quota", details: { code: 429, self: "[Circular]" } }
 * describeThrown(42); // { name: "NonErrorThrown", message: "non-error thrown: 42" }
 * ```
 */
export function describeThrown(value: unknown): ThrownDescription {
  try {
    if (typeof value === "string") return { name: "NonErrorThrown", message: value };
    if (typeof value !== "object" || value === null) {
      return { name: "NonErrorThrown", message: `non-error thrown: ${render(value)}` };
    }
    const error = isErrorSafe(value);
    const name = read(value, "name").value;
    const message = read(value, "message").value;
    const stack = error ? read(value, "stack").value : undefined;
    const description: ThrownDescription = {
      name: typeof name === "string" && name !== "" ? name : error ? "Error" : "NonErrorThrown",
      message: typeof message === "string" ? message : error ? "" : `non-error thrown: ${render(value)}`,
    };
    if (typeof stack === "string") description.stack = stack;
    const details = new TreeCopier().details(value);
    if (Object.keys(details).length > 0) description.details = details;
    return description;
  } catch {
    return { name: "NonErrorThrown", message: "non-error thrown: [unreadable value]" };
  }
}

/**
 * The thrown value as an Error, for events and retry callbacks: an Error is passed through as it is;
 * anything else is wrapped in an Error with the description's name and message, and the value as its
 * `cause`.
 */
export function thrownAsError(value: unknown, description: ThrownDescription): Error {
  if (isErrorSafe(value)) return value;
  const error = new Error(description.message, { cause: value });
  error.name = description.name;
  return error;
}

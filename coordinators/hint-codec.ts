/**
 * The wire format of a wakeup hint, shared by every network transport.
 *
 * A channel, exchange or topic is a public place: other programs, older or newer pawl versions, or an
 * operator typing `NOTIFY` by hand can put anything on it. So decoding is strict and total: it never
 * throws, and anything that is not exactly a hint of this version decodes to `null`, which the caller
 * counts as malformed. The `pawl` marker field carries the format version, so a foreign JSON message is
 * told apart from a hint at once, and a future format can be introduced by bumping the number.
 *
 * Encoding keeps messages far below PostgreSQL's 8000-byte NOTIFY limit, the smallest of the transports.
 */
import type { WakeupHint } from "./spi.js";

/** The version marker written into every encoded hint (the value of its `pawl` field). */
export const HINT_FORMAT_VERSION = 1;

/**
 * The largest encoded hint, in UTF-8 bytes. PostgreSQL rejects NOTIFY payloads of 8000 bytes or more;
 * the margin leaves room for a transport that wraps the text.
 */
export const MAX_ENCODED_HINT_BYTES = 7_900;

/** Longest accepted `source`, `target` and `jobId`: ids and type names, never documents. */
const MAX_FIELD_CHARS = 1_000;

/**
 * The most job ids one `finished` hint carries: 300 ids of up to 19 digits stay under
 * {@link MAX_ENCODED_HINT_BYTES}. A publisher with more sends several hints, or one without ids.
 */
export const MAX_FINISHED_IDS = 300;

/** A job id on the wire: a positive bigint in decimal, as pawl writes ids. */
const jobIdPattern = /^[1-9][0-9]{0,18}$/;

/** The JSON shape on the wire. Short, but named so a human reading a channel can tell what it is. */
interface WireHint {
  pawl: number;
  kind: "work" | "cancel" | "finished";
  priority: number;
  source: string;
  target?: string;
  jobId?: string;
  jobIds?: string[];
  released?: true;
  unkeyed?: true;
}

/**
 * Encodes a hint to its JSON text, or returns `null` when it cannot be sent: an invalid hint, or one still
 * too large after dropping its optional `target` (dropping it only widens who wakes, which is safe).
 *
 * @example
 * ```ts
 * encodeHint({ priority: 50, source: "node-a" }); // '{"pawl":1,"kind":"work","priority":50,"source":"node-a"}'
 * ```
 */
export function encodeHint(hint: WakeupHint): string | null {
  if (!isValidHint(hint)) return null;
  const wire: WireHint = {
    pawl: HINT_FORMAT_VERSION,
    kind: hint.kind ?? "work",
    priority: hint.priority,
    source: hint.source,
  };
  if (hint.target !== undefined) wire.target = hint.target;
  if (wire.kind === "cancel") wire.jobId = hint.jobId;
  if (wire.kind === "work" && hint.released === true) wire.released = true;
  if (wire.kind === "work" && hint.unkeyed === true) wire.unkeyed = true;
  if (wire.kind === "finished" && hint.jobIds !== undefined) wire.jobIds = hint.jobIds;
  let text = JSON.stringify(wire);
  if (Buffer.byteLength(text) > MAX_ENCODED_HINT_BYTES && wire.target !== undefined) {
    delete wire.target;
    text = JSON.stringify(wire);
  }
  if (Buffer.byteLength(text) > MAX_ENCODED_HINT_BYTES && wire.jobIds !== undefined) {
    // Without ids a finished hint asks receivers to re-read every job they wait for: wider, still safe.
    delete wire.jobIds;
    text = JSON.stringify(wire);
  }
  return Buffer.byteLength(text) > MAX_ENCODED_HINT_BYTES ? null : text;
}

/**
 * Decodes a message taken off a channel. Accepts a string or bytes (AMQP delivers a Buffer); returns
 * `null` for anything that is not a valid hint of this format version. Never throws.
 *
 * Unknown extra fields are ignored rather than rejected, so a newer pawl may add an optional field
 * without bumping the version and still be heard by older nodes.
 *
 * @example
 * ```ts
 * decodeHint("hello");        // null
 * decodeHint('{"a":1}');      // null (no marker: a foreign message)
 * ```
 */
export function decodeHint(raw: unknown): WakeupHint | null {
  let text: string;
  if (typeof raw === "string") text = raw;
  else if (raw instanceof Uint8Array)
    text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString();
  else return null;
  if (text.length === 0 || text.length > MAX_ENCODED_HINT_BYTES * 4) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
  const wire = parsed as Record<string, unknown>;
  if (wire.pawl !== HINT_FORMAT_VERSION) return null;
  // Added after version 1 shipped, without bumping it: an older node decodes a `finished` hint to null
  // (counted as malformed and ignored), which costs it nothing, so the version stays 1.
  if (wire.kind !== "work" && wire.kind !== "cancel" && wire.kind !== "finished") return null;
  const hint: WakeupHint = {
    kind: wire.kind,
    priority: wire.priority as number,
    source: wire.source as string,
  };
  if (wire.target !== undefined) hint.target = wire.target as string;
  if (wire.kind === "cancel") hint.jobId = wire.jobId as string;
  if (wire.kind === "finished" && wire.jobIds !== undefined) hint.jobIds = wire.jobIds as string[];
  // Optional and added after version 1 shipped: anything but `true` is read as absent, not as malformed.
  if (wire.kind === "work" && wire.released === true) hint.released = true;
  if (wire.kind === "work" && wire.unkeyed === true) hint.unkeyed = true;
  return isValidHint(hint) ? hint : null;
}

/**
 * Whether a value is a well-formed hint: a finite priority, a non-empty source, an optional string target,
 * a job id when it is a cancel hint (a work hint's `jobId` means nothing and is not sent), and for a
 * finished hint either no ids or 1 to {@link MAX_FINISHED_IDS} decimal job ids.
 */
export function isValidHint(hint: WakeupHint): boolean {
  if (typeof hint !== "object" || hint === null) return false;
  if (typeof hint.priority !== "number" || !Number.isFinite(hint.priority)) return false;
  if (!isField(hint.source)) return false;
  if (hint.target !== undefined && !isField(hint.target)) return false;
  const kind = hint.kind ?? "work";
  if (kind === "cancel") return isField(hint.jobId);
  if (kind === "finished") return hint.jobIds === undefined || isJobIdList(hint.jobIds);
  return kind === "work";
}

/** A non-empty list of at most {@link MAX_FINISHED_IDS} job ids, each a decimal bigint. */
function isJobIdList(value: unknown): value is string[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.length <= MAX_FINISHED_IDS &&
    value.every((id) => typeof id === "string" && jobIdPattern.test(id))
  );
}

function isField(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_FIELD_CHARS;
}

/**
 * Text that PostgreSQL can store. PostgreSQL's text and jsonb hold UTF-8 without NUL, so two things a
 * JavaScript string may contain are refused with a data error: U+0000 (raw: SQLSTATE 22021; as the JSON
 * escape `\u0000` in jsonb: 22P05) and a lone UTF-16 surrogate, which has no UTF-8 form (jsonb: 22P02;
 * in a text parameter the driver silently turns it into U+FFFD). `input-text.ts` finds such text in a
 * caller's input to refuse it; this file repairs text pawl must store anyway (an error message) and scans
 * JSON text for what jsonb refuses. Nothing here knows about jobs: outcomes (`logic/outcome-json.ts`)
 * and anything else stored as text or jsonb can share it.
 */
import { textProblem } from "./input-text.js";

/** The character that replaces what cannot be stored (U+FFFD REPLACEMENT CHARACTER). */
export const replacementChar = "\uFFFD";

/** `String.prototype.toWellFormed` (ES2024, in every Node pawl supports; not yet in the TS lib we target). */
const toWellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed();

/**
 * `s` with every U+0000 and lone surrogate replaced by U+FFFD, and cut to at most `maxLength` UTF-16
 * units. The cut never splits a surrogate pair (a half pair would itself be unstorable): it stops one
 * unit short instead.
 *
 * @example
 * ```ts
 * sanitizeText("x\u0000"); // "x\uFFFD"
 * sanitizeText("ab\uD83D\uDE00", 3); // "ab"
 * ```
 */
export function sanitizeText(s: string, maxLength = Infinity): string {
  let cut = s;
  if (cut.length > maxLength) {
    const end = Math.max(0, Math.floor(maxLength));
    const last = cut.charCodeAt(end - 1);
    const next = cut.charCodeAt(end);
    const splitsPair = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
    cut = cut.slice(0, splitsPair ? end - 1 : end);
  }
  // toWellFormed replaces each lone surrogate with U+FFFD; NUL is well-formed UTF-16 and needs its own.
  return textProblem(cut) === null ? cut : toWellFormed(cut).replaceAll("\u0000", replacementChar);
}

/** Anything that may need the full scan: an escape of NUL or a surrogate, or a raw NUL or surrogate. */
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const suspicious = /\\u0000|\\u[dD][89abcdefABCDEF]|[\u0000\uD800-\uDFFF]/;

const hex = (text: string, at: number): number =>
  /^[0-9a-fA-F]{4}$/.test(text.slice(at, at + 4)) ? parseInt(text.slice(at, at + 4), 16) : -1;
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * Why PostgreSQL's jsonb would refuse this JSON text, or `null` when it accepts it. `text` must be valid
 * JSON (as `JSON.stringify` writes it); the scan looks only for what valid JSON may still carry that
 * jsonb refuses: a NUL or a lone surrogate in a string or key, written raw or as a `\u` escape, and
 * nesting deeper than `maxDepth` arrays and objects (PostgreSQL parses JSON recursively, and a deep
 * enough document fails with "stack depth limit exceeded").
 *
 * @example
 * ```ts
 * jsonbRefusal('"a\\u0000b"', 100); // "a NUL (U+0000) in a string"
 * jsonbRefusal('[[1]]', 1); // "nested deeper than 1 levels"
 * jsonbRefusal('{"a":"\\\\u0000"}', 100); // null: an escaped backslash, then the text "u0000"
 * ```
 */
export function jsonbRefusal(text: string, maxDepth: number): string | null {
  // Most texts have nothing suspicious and cannot be deep enough to matter: skip the scan.
  if (!suspicious.test(text) && text.length <= 2 * maxDepth) return null;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!inString) {
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) {
        if (++depth > maxDepth) return `nested deeper than ${maxDepth} levels`;
      } else if (c === 0x5d || c === 0x7d) depth--;
      continue;
    }
    if (c === 0x22) inString = false;
    else if (c === 0) return "a NUL (U+0000) in a string";
    else if (isHigh(c)) {
      if (!isLow(text.charCodeAt(i + 1))) return "a lone surrogate in a string";
      i++;
    } else if (isLow(c)) return "a lone surrogate in a string";
    else if (c === 0x5c) {
      if (text.charCodeAt(i + 1) !== 0x75) {
        i++; // \" \\ \/ \b \f \n \r \t: one character, nothing to check
        continue;
      }
      const code = hex(text, i + 2);
      if (code === 0) return "a NUL (U+0000) in a string";
      if (isLow(code)) return "a lone surrogate in a string";
      if (isHigh(code)) {
        // A high surrogate escape must be followed by a low surrogate escape, or it stands alone.
        const pairsUp = text.charCodeAt(i + 6) === 0x5c && text.charCodeAt(i + 7) === 0x75;
        if (!pairsUp || !isLow(hex(text, i + 8))) return "a lone surrogate in a string";
        i += 11;
        continue;
      }
      i += 5;
    }
  }
  return null;
}

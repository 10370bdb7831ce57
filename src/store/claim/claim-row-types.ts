/**
 * How the claim statements' rows are parsed: `timestamptz` columns become epoch milliseconds (a number)
 * instead of `Date` objects. A claim returns two timestamps per job and the runtime only ever subtracts
 * them, so a Date per column was pure garbage on the hot path (pg's date parsing was a visible share of a
 * drain's profile). Passed per query as pg's `types` (`getTypeParser`), so every other statement, and the
 * public `Job` that getJob and listJobs return, keeps its Dates. Every other type keeps pg's own parser.
 */
import pg from "pg";
import type { CustomTypesConfig, QueryConfig } from "pg";

/** PostgreSQL's type oid of `timestamptz`. */
const timestamptzOid = 1184;

const pgTimestamptz = pg.types.getTypeParser(timestamptzOid, "text") as (text: string) => Date | number;

const digit = (s: string, i: number): number => s.charCodeAt(i) - 48;
const two = (s: string, i: number): number => digit(s, i) * 10 + digit(s, i + 1);
const isDigit = (s: string, i: number): boolean => {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
};

/**
 * A `timestamptz` in PostgreSQL's text output (ISO DateStyle: `2026-12-01 22:46:30.123456+00`, the offset
 * as `±HH`, `±HH:MM` or `±HH:MM:SS`) as epoch milliseconds, truncated as pg truncates to a Date. Anything
 * else (`infinity`, BC dates, years of other than four digits) goes through pg's own parser.
 */
export function timestamptzMs(text: string): number {
  const n = text.length;
  if (n >= 22 && text.charCodeAt(4) === 45 && text.charCodeAt(10) === 32 && isDigit(text, 0)) {
    const year = two(text, 0) * 100 + two(text, 2);
    let i = 19;
    let ms = 0;
    if (text.charCodeAt(i) === 46) {
      i++;
      let scale = 100;
      while (i < n && isDigit(text, i)) {
        if (scale >= 1) ms += digit(text, i) * scale;
        scale /= 10;
        i++;
      }
    }
    const sign = text.charCodeAt(i);
    if (year >= 100 && (sign === 43 || sign === 45) && i + 3 <= n) {
      let offset = two(text, i + 1) * 3600;
      i += 3;
      if (i + 3 <= n && text.charCodeAt(i) === 58) {
        offset += two(text, i + 1) * 60;
        i += 3;
      }
      if (i + 3 <= n && text.charCodeAt(i) === 58) {
        offset += two(text, i + 1);
        i += 3;
      }
      if (i === n) {
        const utc = Date.UTC(
          year,
          two(text, 5) - 1,
          two(text, 8),
          two(text, 11),
          two(text, 14),
          two(text, 17),
          ms,
        );
        return utc - (sign === 43 ? 1 : -1) * offset * 1000;
      }
    }
  }
  const parsed = pgTimestamptz(text);
  return typeof parsed === "number" ? parsed : parsed.getTime();
}

/** pg's per-query type parsing with `timestamptz` (text format) read by `parse`, every other type as pg reads it. */
export function typesWithTimestamptz(parse: (text: string) => unknown): CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      oid === timestamptzOid && format !== "binary"
        ? parse
        : pg.types.getTypeParser(oid, format ?? "text")) as CustomTypesConfig["getTypeParser"],
  };
}

/** pg's per-query type parsing of the claim statements: timestamptz as epoch ms, the rest as pg parses it. */
export const claimRowTypes: CustomTypesConfig = typesWithTimestamptz(timestamptzMs);

/** `config` (one claim statement's query, built for this call), parsing its rows with {@link claimRowTypes}. */
export function withClaimRowTypes(config: QueryConfig): QueryConfig {
  config.types = claimRowTypes;
  return config;
}

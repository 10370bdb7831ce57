/**
 * Coordinator specs are URLs that may carry passwords (`amqp://user:secret@host`). Every error message and
 * log line that shows one goes through {@link redactUrl}, so a typo in a config never leaks a secret into
 * logs or crash reports.
 */

/**
 * Replaces the password in a URL-like string with `***`; leaves anything else unchanged.
 *
 * @example
 * ```ts
 * redactUrl("amqp://guest:guest@localhost:5672"); // "amqp://guest:***@localhost:5672"
 * ```
 */
export function redactUrl(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@?#]*):[^@/?#]*@/i, "$1:***@");
}

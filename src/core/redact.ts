/**
 * Connection URLs may carry passwords (`postgres://app:secret@db/jobs`, `amqp://guest:guest@mq`). Every
 * error message, log line, metric, page and CLI line that could show one goes through {@link redactUrl}
 * (one URL) or {@link redactText} (free text that may contain URLs), so a typo in a config never leaks a
 * secret into logs or crash reports.
 *
 * The rule works on the text, not on a URL parser, because the URLs that matter most are the ones that do
 * not parse: a password with a raw `@`, `#`, `/` or `?` (a generated password nobody percent-encoded)
 * makes `new URL` throw or split the URL in the wrong place. The userinfo of `scheme://userinfo@host` ends
 * at the LAST `@` of the URL, so everything between the first `:` after the user name and that `@` is
 * treated as the password. When in doubt the rule removes more (a query value holding an `@`), never less.
 * A `password=` key (libpq's query parameter and key/value strings) is removed too.
 */

/** What replaces a password. */
const mask = "***";

/** `scheme://` followed by a run of characters that a URL in free text can hold (no spaces or quotes). */
const urlInText = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s"'<>`]+)/gi;

/** `password=value` (query parameter, libpq key/value string), quoted or not. */
const passwordPair = /(password\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;,'"]+)/gi;

/**
 * Replaces the password of one URL-like string with `***`; leaves anything else unchanged.
 *
 * @example
 * ```ts
 * redactUrl("amqp://guest:guest@localhost:5672"); // "amqp://guest:***@localhost:5672"
 * redactUrl("postgres://app:p@ss/w#rd@db/jobs"); // "postgres://app:***@db/jobs"
 * ```
 */
export function redactUrl(text: string): string {
  return redactText(text);
}

/**
 * Removes every password from free text: the userinfo password of each `scheme://` URL in it, and each
 * `password=` value.
 *
 * @example
 * ```ts
 * redactText('connect to "postgres://u:s3cret@db:5432/app" failed'); // '... "postgres://u:***@db:5432/app" failed'
 * redactText("host=db password=s3cret"); // "host=db password=***"
 * ```
 */
export function redactText(text: string): string {
  const urls = text.replace(urlInText, (_, scheme: string, rest: string) => scheme + redactRest(rest));
  return urls.replace(passwordPair, (_, key: string) => key + mask);
}

/** The part of a URL after `scheme://`, with the userinfo's password masked. */
function redactRest(rest: string): string {
  const at = rest.lastIndexOf("@");
  if (at < 0) return rest;
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(":");
  // No password: `user@host`. A user name cannot hold a raw `/`, so `host/db?x=a@b` has no userinfo...
  if (colon < 0) return rest;
  const user = userinfo.slice(0, colon);
  // ...and neither has `host:5432/db?x=a@b` when the part before the colon is a host with a path after
  // it; that case is masked anyway (more, never less), since `u:pa/ss@host` looks the same.
  return `${user}:${mask}${rest.slice(at)}`;
}

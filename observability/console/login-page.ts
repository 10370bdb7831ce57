/**
 * The console's sign-in page: one password field that POSTs the token to `<base>/login`, which answers
 * with an HttpOnly session cookie (access.ts). The token travels only in that form's body, so it never
 * appears in an address, a page, the browser's history or a proxy's access log.
 */
import { h } from "./html.js";

/** The sign-in page's HTML (served with status 401 to a visitor without the session). */
export function loginPage(base: string, nonce: string, failed: boolean): string {
  return `<!doctype html>${
    h`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Sign in · pawl console</title><style nonce="${nonce}">body{font:15px system-ui,sans-serif;margin:4rem auto;max-width:22rem}input,button{font:inherit;padding:.4rem;width:100%;box-sizing:border-box;margin:.3rem 0}.bad{color:#b00}</style></head>
<body><h1>pawl console</h1>${failed ? h`<p class="bad" role="alert">That token is not the console's.</p>` : ""}
<form method="post" action="${base}/login"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button></form></body></html>`.html
  }`;
}

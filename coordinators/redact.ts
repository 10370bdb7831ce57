/**
 * The coordinators' entry re-exports the one redaction helper (src/core/redact.ts), which the logger,
 * the HTTP surfaces and the CLI use too.
 */
export { redactText, redactUrl } from "../src/core/redact.js";

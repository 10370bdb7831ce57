/**
 * Runs the CLI from source (`tsx src/cli/run.ts <args>`), for development and for tests when the
 * compiled bin/pawl.js is not available. The published entry point is bin/pawl.js.
 */
import { main } from "./main.js";

process.exitCode = await main(process.argv.slice(2));

#!/usr/bin/env node
// The published entry point: the CLI lives in the compiled output (npm install runs `prepare`, which builds it).
import { main } from "../dist/src/cli/main.js";

process.exitCode = await main(process.argv.slice(2));

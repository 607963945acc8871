#!/usr/bin/env node
// Entry point of the tidepool command: runs the compiled CLI.
import { main } from '../dist/src/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  },
);

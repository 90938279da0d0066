#!/usr/bin/env node
// Process entry of the `vqs` command-line tool (package.json "bin"; `npm run vqs -- ...` runs
// it from source). Everything else is in program.ts, which takes the process as arguments.
import { processInterrupts } from "./terminal/interrupts.js";
import { run } from "./program.js";

// A reader that went away (`vqs ... | head`) is not an error of ours.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  interrupts: processInterrupts(process),
});

// @workflow/world-testing's own app server (the 5.x peer suite's), as tests start it: where it is,
// and the port it reports on its control pipe once it listens.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The peer suite's files (its vitest config, the Promise.withResolvers shim for Node 20). */
export const SUITE = join(ROOT, "examples/workflow-5/peer-suite");
/** The suite's app server (spawn with CONTROL_FD=3 and a pipe as fd 3). */
export const SERVER = join(ROOT, "node_modules/@workflow/world-testing/dist/src/server.mjs");

/** The port the suite's server reports on its control pipe (fd 3) once it listens. */
export async function controlPort(child: ChildProcess): Promise<number> {
  const control = child.stdio[3] as Readable;
  let text = "";
  for await (const chunk of control) {
    text += (chunk as Buffer).toString();
    const line = text.split("\n")[0]!;
    if (text.includes("\n")) return (JSON.parse(line) as { info: { port: number } }).info.port;
  }
  throw new Error("the suite's server ended before it listened");
}

// The 5.x World (examples/workflow-5) refuses a push timeout above 800 s: core protects a running
// inline step for 860 s, and a longer push timeout would let vqs push the flow message again
// while its step still runs. Made in a process of its own, as core makes it.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const WORLD_5 = fileURLToPath(new URL("../../../examples/workflow-5", import.meta.url));

/** createWorld() of the 5.x World with VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS = `seconds`. */
function makeWorld(seconds: number) {
  return spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      "import { createWorld } from './world.mjs'; createWorld(); console.log('made'); process.exit(0);",
    ],
    {
      cwd: WORLD_5,
      encoding: "utf8",
      timeout: 30_000,
      env: {
        PATH: process.env.PATH ?? "",
        WORKFLOW_VERCEL_BACKEND_URL: "http://127.0.0.1:1",
        VQS_TOKEN: "unused",
        VERCEL_DEPLOYMENT_ID: "dpl_timeout",
        VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS: String(seconds),
      },
    },
  );
}

describe("the 5.x World's push timeout", () => {
  it("refuses VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS over 800 and takes 800", () => {
    const over = makeWorld(801);
    expect(over.status).not.toBe(0);
    expect(over.stderr).toContain("VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS must be at most 800 on 5.x");
    const at = makeWorld(800);
    expect(at.status, at.stderr).toBe(0);
    expect(at.stdout).toContain("made");
  });
});

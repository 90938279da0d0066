// Runs the 5.x peer suite on its own (the repository's root config only takes test/): one file,
// cases one after another (each spawns an app server that stores the push settings it needs).
import { fileURLToPath } from "node:url";

export default {
  test: {
    root: fileURLToPath(new URL("../../..", import.meta.url)),
    include: ["examples/workflow-5/peer-suite/*.test.mjs"],
    setupFiles: ["examples/workflow-5/peer-suite/promise-with-resolvers.mjs"],
    fileParallelism: false,
    testTimeout: 60_000,
  },
};

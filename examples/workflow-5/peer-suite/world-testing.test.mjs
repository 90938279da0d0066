// The Workflow DevKit's conformance suite for Worlds (@workflow/world-testing 5.0.0-beta.35), run
// as it ships against the 5.x vqs World. Each case spawns the suite's own app server with
// WORKFLOW_TARGET_WORLD set to the World below; the World's start() stores the push settings for
// that server's port. Run by test/integration/workflow/world-testing-5.test.ts, which starts the
// gateway and says which cases are expected to fail and why.
import { createTestSuite } from "@workflow/world-testing";

createTestSuite("./examples/workflow-5/world.mjs");

// A Workflow DevKit World for self-hosting on vqs: the queue is world-vercel's createQueue() aimed
// at a vqs gateway through its own base-URL setting (WORKFLOW_VERCEL_BACKEND_URL, served under
// /queues-proxy), storage and streams are world-postgres's (world-local's without
// WORKFLOW_POSTGRES_URL, for development). start() stores the push settings of the app's flow
// and step routes in the deployment's namespace. The token is read again when its file changes,
// so it can rotate under a running app. Settings and why: docs/operations.md, "Workflow DevKit".
import { reenqueueActiveRuns } from "@workflow/world";
import { createLocalWorld } from "@workflow/world-local";
import { createWorld as createPostgresWorld } from "@workflow/world-postgres";
import { createQueue } from "@workflow/world-vercel";
import {
  CONSUMER,
  rotatingQueue,
  settingsFromEnv,
  storeSettings,
  tokenSource,
  vqsWorld,
} from "./vqs-queue.mjs";

export { CONSUMER, settingsFromEnv, tokenSource };

/** The topic patterns Workflow's builder declares (queue/v2beta triggers), and their routes. */
export const TRIGGERS = [
  { topic: "__wkf_workflow_*", route: "/.well-known/workflow/v1/flow" },
  { topic: "__wkf_step_*", route: "/.well-known/workflow/v1/step" },
];

/** The World (core calls this through WORKFLOW_TARGET_WORLD, or pass it to setWorld()). */
export function createWorld(overrides = {}) {
  const settings = { ...settingsFromEnv(), ...overrides };
  // world-vercel reads its base URL from the environment when a queue is made.
  process.env.WORKFLOW_VERCEL_BACKEND_URL = settings.vqsUrl;
  process.env.VERCEL_DEPLOYMENT_ID = settings.deploymentId;
  const currentToken = tokenSource(settings);
  const queue = rotatingQueue(createQueue, settings, currentToken);
  const base = settings.postgresUrl
    ? createPostgresWorld({ connectionString: settings.postgresUrl })
    : createLocalWorld({ dataDir: settings.localDataDir });
  return vqsWorld(base, queue, async () => {
    await storeSettings(settings, currentToken(), TRIGGERS);
    // Runs left running by a previous process are queued again, as the base worlds do.
    await reenqueueActiveRuns(base.runs, queue.queue, "vqs");
  });
}

export default createWorld;

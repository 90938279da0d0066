// The vqs World of examples/workflow on the Workflow DevKit 5.x betas: the queue is world-vercel
// 5.x's createQueue() aimed at a vqs gateway through /queues-proxy, storage and streams are
// world-local 5.x's. In 5.x steps run inline in the flow route or travel on the workflow topic,
// so only `__wkf_workflow_*` is pushed; with WORKFLOW_SEQUENTIAL_REPLAYS each run and inline
// step gets a topic of its own under that pattern, which vqs removes once settled. Settings as in
// ../workflow/vqs-queue.mjs; the app's URL defaults to this process's PORT on loopback (what
// @workflow/world-testing's server sets before it calls start()).
import { reenqueueActiveRuns } from "@workflow/world";
import { createLocalWorld, initDataDir } from "@workflow/world-local";
import { createQueue } from "@workflow/world-vercel";
import {
  rotatingQueue,
  settingsFromEnv,
  storeSettings,
  tokenSource,
  vqsWorld,
} from "../workflow/vqs-queue.mjs";

/** The one topic pattern the 5.x builder declares, and its route. */
export const TRIGGERS = [{ topic: "__wkf_workflow_*", route: "/.well-known/workflow/v1/flow" }];

/**
 * Core protects a running inline step for 860 s: a push timeout above that would let vqs push
 * the flow message again while its step still runs (docs/operations.md, "Workflow DevKit").
 */
export const MAX_PUSH_TIMEOUT_SECONDS = 800;

export function createWorld(overrides = {}) {
  const settings = { ...settingsFromEnv(), ...overrides };
  if (settings.timeoutSeconds > MAX_PUSH_TIMEOUT_SECONDS) {
    throw new Error(
      `VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS must be at most ${MAX_PUSH_TIMEOUT_SECONDS} on 5.x`,
    );
  }
  process.env.WORKFLOW_VERCEL_BACKEND_URL = settings.vqsUrl;
  process.env.VERCEL_DEPLOYMENT_ID = settings.deploymentId;
  const currentToken = tokenSource(settings);
  const queue = rotatingQueue(createQueue, settings, currentToken);
  const dataDir = settings.localDataDir ?? ".workflow-data";
  const base = createLocalWorld({ dataDir });
  return vqsWorld(base, queue, async () => {
    const appUrl =
      settings.appUrl ?? (process.env.PORT ? `http://127.0.0.1:${process.env.PORT}` : null);
    await initDataDir(dataDir);
    await storeSettings(settings, currentToken(), TRIGGERS, appUrl);
    await reenqueueActiveRuns(base.runs, queue.queue, "vqs");
  });
}

export default createWorld;

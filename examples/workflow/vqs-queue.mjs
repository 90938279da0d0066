// The parts of a vqs World that do not depend on a Workflow DevKit version (no package imports):
// its settings from the environment, a token file read again when it changes, world-vercel's
// queue remade when the token rotates, and the push settings stored at start. world.mjs (4.x)
// and ../workflow-5/world.mjs (the 5.x betas) pass in their own createQueue and triggers.
import { readFileSync, statSync } from "node:fs";

/** The consumer group the builder's triggers name. */
export const CONSUMER = "default";

/**
 * The settings, from the environment unless given:
 * - WORKFLOW_VERCEL_BACKEND_URL: the vqs gateway (world-vercel's own setting);
 * - VQS_TOKEN_FILE (read again when it changes) or VQS_TOKEN: a vqs token;
 * - VERCEL_DEPLOYMENT_ID: the deployment, whose namespace the queues live in;
 * - VQS_WORKFLOW_APP_URL: the app's base URL, which vqs pushes to (no settings stored without);
 * - VQS_WORKFLOW_MAX_CONCURRENCY (50), VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS (300),
 *   VQS_WORKFLOW_RETRY_AFTER_SECONDS (5, as the builder's triggers say);
 * - WORKFLOW_POSTGRES_URL: storage in Postgres; without it, world-local's files
 *   (WORKFLOW_LOCAL_DATA_DIR).
 */
export function settingsFromEnv(env = process.env) {
  const number = (name, fallback) => {
    const v = env[name];
    if (v === undefined || v === "") return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number`);
    return n;
  };
  const vqsUrl = env.WORKFLOW_VERCEL_BACKEND_URL;
  if (!vqsUrl) throw new Error("WORKFLOW_VERCEL_BACKEND_URL must name the vqs gateway");
  if (!env.VQS_TOKEN_FILE && !env.VQS_TOKEN) {
    throw new Error("VQS_TOKEN_FILE or VQS_TOKEN must give a vqs token");
  }
  if (!env.VERCEL_DEPLOYMENT_ID) throw new Error("VERCEL_DEPLOYMENT_ID must be set");
  const store = env.VQS_WORKFLOW_STORE_SETTINGS ?? "true";
  if (store !== "true" && store !== "false") {
    throw new Error("VQS_WORKFLOW_STORE_SETTINGS must be true or false");
  }
  return {
    vqsUrl: vqsUrl.replace(/\/+$/, ""),
    tokenFile: env.VQS_TOKEN_FILE || null,
    token: env.VQS_TOKEN || null,
    deploymentId: env.VERCEL_DEPLOYMENT_ID,
    appUrl: env.VQS_WORKFLOW_APP_URL ? env.VQS_WORKFLOW_APP_URL.replace(/\/+$/, "") : null,
    maxConcurrency: number("VQS_WORKFLOW_MAX_CONCURRENCY", 50),
    timeoutSeconds: number("VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS", 300),
    retryAfterSeconds: number("VQS_WORKFLOW_RETRY_AFTER_SECONDS", 5),
    storeSettings: store === "true",
    postgresUrl: env.WORKFLOW_POSTGRES_URL || null,
    localDataDir: env.WORKFLOW_LOCAL_DATA_DIR || undefined,
  };
}

/** The current token: the file's content, read again only when its size or mtime changes. */
export function tokenSource({ tokenFile, token }) {
  if (!tokenFile) return () => token;
  let seen = "";
  let value = "";
  return () => {
    const s = statSync(tokenFile);
    const stamp = `${s.mtimeMs}:${s.size}`;
    if (stamp !== seen) {
      value = readFileSync(tokenFile, "utf8").trim();
      seen = stamp;
    }
    return value;
  };
}

/**
 * world-vercel's queue for the current token: a new one when the token changed (the client
 * takes its token once), the previous one otherwise. Handlers made by createQueueHandler follow.
 */
export function rotatingQueue(createQueue, settings, currentToken) {
  let made = null;
  const current = () => {
    const token = currentToken();
    if (made?.token !== token) {
      made = {
        token,
        queue: createQueue({
          // Any non-empty IDs: they turn on world-vercel's base-URL setting; vqs takes the
          // namespace from the token (and the deployment from VERCEL_DEPLOYMENT_ID).
          projectConfig: { projectId: "vqs", teamId: "vqs", environment: "production" },
          token,
        }),
        handlers: new Map(),
      };
    }
    return made;
  };
  return {
    queue: (name, payload, opts) => current().queue.queue(name, payload, opts),
    getDeploymentId: async () => settings.deploymentId,
    createQueueHandler(prefix, handler) {
      return (request) => {
        const now = current();
        let h = now.handlers.get(prefix);
        if (!h) {
          h = now.queue.createQueueHandler(prefix, handler);
          now.handlers.set(prefix, h);
        }
        return h(request);
      };
    },
  };
}

/**
 * PUTs the push settings of each trigger pattern (`{topic, route}`) for the app at `appUrl`
 * (idempotent: a PUT replaces the document); nothing when `vqs triggers sync` owns them.
 */
export async function storeSettings(settings, token, triggers, appUrl = settings.appUrl) {
  if (!appUrl || settings.storeSettings === false) return;
  for (const t of triggers) {
    const url = `${settings.vqsUrl}/api/v3/topic/${encodeURIComponent(t.topic)}/consumer/${CONSUMER}/settings`;
    const res = await fetch(url, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${token}`,
        "vqs-deployment-id": settings.deploymentId,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        push: {
          url: `${appUrl}${t.route}`,
          maxConcurrency: settings.maxConcurrency,
          timeoutSeconds: settings.timeoutSeconds,
        },
        retry: { afterSeconds: settings.retryAfterSeconds },
      }),
    });
    if (!res.ok) {
      throw new Error(`vqs refused the settings of ${t.topic}: ${res.status} ${await res.text()}`);
    }
  }
}

/**
 * A World of `base`'s storage, hooks and streams with the vqs `queue`, and the given `start`
 * (never `base.start()`, which would start the base's own queue).
 */
export function vqsWorld(base, queue, start) {
  const { runs, steps, events, hooks } = base;
  return {
    ...base,
    ...queue,
    start,
    async close() {
      await base.close?.();
    },
    // Named explicitly so that a spread above can never shadow storage with queue parts.
    runs,
    steps,
    events,
    hooks,
  };
}

// Liveness (the process answers) and readiness (JetStream answers) for Kubernetes probes.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../errors.js";
import { HEALTHZ, READYZ } from "../openapi/operations.js";

export interface HealthOptions {
  readonly isReady: () => Promise<boolean>;
}

export function installHealth(app: FastifyInstance, opts: HealthOptions): void {
  app.get("/healthz", { schema: HEALTHZ }, () => ({ status: "ok" }));
  app.get("/readyz", { schema: READYZ }, async () => {
    if (!(await opts.isReady())) throw new AppError("storage_unavailable");
    return { status: "ready" };
  });
}

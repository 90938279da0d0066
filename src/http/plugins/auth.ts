// Authenticates every /api/v3 request: Bearer token -> tenant -> namespace (with the optional
// Vqs-Deployment-Id). The namespace is all the routes see of identity.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { TokenVerifier } from "../../auth/token-verifier.js";
import type { Config } from "../../config.js";
import { AppError } from "../../errors.js";
import { LIMITS } from "../../queue/limits.js";
import { makeNamespace, type Namespace } from "../../queue/namespace.js";
import { stringHeader } from "../encoding/headers.js";

declare module "fastify" {
  interface FastifyRequest {
    namespace: Namespace;
  }
}

export interface AuthOptions {
  readonly verifier: TokenVerifier;
  readonly config: Pick<Config, "allowedTeams" | "allowedProjects" | "allowedEnvironments">;
}

export function bearerToken(header: string | undefined): string {
  const m = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header ?? "");
  if (!header) throw new AppError("missing_token");
  if (!m) throw new AppError("invalid_token");
  return m[1]!;
}

export function installAuth(app: FastifyInstance, opts: AuthOptions): void {
  const { allowedTeams, allowedProjects, allowedEnvironments } = opts.config;
  app.decorateRequest("namespace", null as unknown as Namespace);
  app.addHook("onRequest", async (request: FastifyRequest) => {
    const tenant = await opts.verifier.verify(bearerToken(request.headers.authorization));
    if (
      (allowedTeams && !allowedTeams.has(tenant.team)) ||
      (allowedProjects && !allowedProjects.has(tenant.project)) ||
      (allowedEnvironments && !allowedEnvironments.has(tenant.environment))
    ) {
      throw new AppError("tenant_not_allowed");
    }
    const deployment = stringHeader(
      request.headers["vqs-deployment-id"],
      LIMITS.deploymentIdMaxLength,
      "invalid_deployment_id",
      /^[\x21-\x7e]+$/,
    );
    request.namespace = makeNamespace(tenant.team, tenant.project, tenant.environment, deployment);
  });
}

// Authenticates every /api/v3 request: Bearer token -> tenant -> namespace (with the optional
// Vqs-Deployment-Id). The namespace is all the routes see of identity.
//
// A client sends the same two headers on every request, so the namespace they resolve to is
// remembered under those exact header values until the token expires: a request with headers
// seen before costs one map lookup, and gets the same frozen Namespace object (which the name
// caches downstream then find at once). Whatever is remembered was produced by the full check
// below from the same inputs; the only input that changes with time is the token's expiry.
import type {
  FastifyError,
  FastifyInstance,
  FastifyRequest,
  HookHandlerDoneFunction,
} from "fastify";
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
  /** The clock tokens expire by (the verifier's). */
  readonly now: () => number;
  /** Most header pairs remembered at once. */
  readonly cacheSize?: number;
}

export function bearerToken(header: string | undefined): string {
  const m = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header ?? "");
  if (!header) throw new AppError("missing_token");
  if (!m) throw new AppError("invalid_token");
  return m[1]!;
}

interface Resolved {
  readonly namespace: Namespace;
  readonly expiresAtMs: number;
}

export function installAuth(app: FastifyInstance, opts: AuthOptions): void {
  const { allowedTeams, allowedProjects, allowedEnvironments } = opts.config;
  const cacheSize = opts.cacheSize ?? 10_000;
  const resolved = new Map<string, Resolved>();

  const authenticate = async (request: FastifyRequest, cacheKey: string | null) => {
    const { tenant, expiresAtMs } = await opts.verifier.verify(
      bearerToken(request.headers.authorization),
    );
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
    const namespace = makeNamespace(tenant.team, tenant.project, tenant.environment, deployment);
    if (cacheKey !== null) {
      if (resolved.size >= cacheSize) resolved.delete(resolved.keys().next().value!);
      resolved.set(cacheKey, { namespace, expiresAtMs });
    }
    request.namespace = namespace;
  };

  app.decorateRequest("namespace", null as unknown as Namespace);
  // Callback style: a request whose headers were seen before is done without a promise.
  app.addHook("onRequest", (request, _reply, done: HookHandlerDoneFunction) => {
    const key = cacheKeyOf(request);
    const hit = key === null ? undefined : resolved.get(key);
    if (hit !== undefined && hit.expiresAtMs > opts.now()) {
      request.namespace = hit.namespace;
      done();
      return;
    }
    authenticate(request, key).then(
      () => done(),
      (err: unknown) => done(err as FastifyError),
    );
  });
}

/** The header values the namespace depends on, joined injectively (header values hold no
 * newline); null when they are not plain strings, which the full check then rejects. */
function cacheKeyOf(request: FastifyRequest): string | null {
  const { authorization } = request.headers;
  const deployment = request.headers["vqs-deployment-id"];
  if (typeof authorization !== "string") return null;
  if (deployment === undefined) return authorization;
  return typeof deployment === "string" ? `${authorization}\n${deployment}` : null;
}

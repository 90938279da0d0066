// Authenticates every /api/v3 request: Bearer token -> tenant -> namespace (with the optional
// Vqs-Deployment-Id). The namespace is what the routes act in; the identity (who, and whether an
// operator) is for audit events and operator-only calls. An operator's token may name another
// namespace with Vqs-Namespace (team/project/environment[/deployment], parts percent-encoded).
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
    identity: Identity;
  }
}

/** Who a request is from (its token), as audit events name it. */
export interface Identity {
  readonly team: string;
  readonly project: string;
  readonly environment: string;
  readonly subject: string | null;
  /** May list namespaces and act in any (VQS_OPERATOR_TEAMS). */
  readonly operator: boolean;
}

export interface AuthOptions {
  readonly verifier: TokenVerifier;
  readonly config: Pick<
    Config,
    "allowedTeams" | "allowedProjects" | "allowedEnvironments" | "operatorTeams"
  >;
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
  readonly identity: Identity;
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
    const identity: Identity = {
      team: tenant.team,
      project: tenant.project,
      environment: tenant.environment,
      subject: tenant.subject,
      operator: opts.config.operatorTeams.has(tenant.team),
    };
    const deployment = stringHeader(
      request.headers["vqs-deployment-id"],
      LIMITS.deploymentIdMaxLength,
      "invalid_deployment_id",
      /^[\x21-\x7e]+$/,
    );
    const other = request.headers["vqs-namespace"];
    let namespace: Namespace;
    if (other !== undefined) {
      if (!identity.operator) throw new AppError("operator_only");
      if (deployment !== null) {
        throw new AppError("invalid_namespace", {
          message: "Vqs-Namespace names the deployment itself: send it without Vqs-Deployment-Id.",
        });
      }
      namespace = parseNamespaceLabel(other);
    } else {
      namespace = makeNamespace(tenant.team, tenant.project, tenant.environment, deployment);
    }
    if (cacheKey !== null) {
      if (resolved.size >= cacheSize) resolved.delete(resolved.keys().next().value!);
      resolved.set(cacheKey, { namespace, identity, expiresAtMs });
    }
    request.namespace = namespace;
    request.identity = identity;
  };

  app.decorateRequest("namespace", null as unknown as Namespace);
  app.decorateRequest("identity", null as unknown as Identity);
  // Callback style: a request whose headers were seen before is done without a promise.
  app.addHook("onRequest", (request, _reply, done: HookHandlerDoneFunction) => {
    const key = cacheKeyOf(request);
    const hit = key === null ? undefined : resolved.get(key);
    if (hit !== undefined && hit.expiresAtMs > opts.now()) {
      request.namespace = hit.namespace;
      request.identity = hit.identity;
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
  const other = request.headers["vqs-namespace"];
  if (typeof authorization !== "string") return null;
  if (deployment === undefined && other === undefined) return authorization;
  if (typeof deployment === "object" || typeof other === "object") return null;
  return `${authorization}\n${deployment ?? ""}\n${other ?? ""}\n${deployment === undefined ? 0 : 1}`;
}

/** `team/project/environment[/deployment]`, each part percent-encoded (as `label` shows it). */
export function parseNamespaceLabel(label: string | string[] | undefined): Namespace {
  const parts = typeof label === "string" ? label.split("/") : [];
  let decoded: string[] = [];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    decoded = [];
  }
  if (
    (decoded.length !== 3 && decoded.length !== 4) ||
    decoded.some((p) => p.length === 0 || p.length > 256)
  ) {
    throw new AppError("invalid_namespace");
  }
  return makeNamespace(decoded[0]!, decoded[1]!, decoded[2]!, decoded[3] ?? null);
}

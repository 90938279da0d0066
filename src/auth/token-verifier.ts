// Verifies bearer JWTs (jose) against the issuer's JWKS and turns them into a tenant. Verified
// tokens are cached until they expire, so a busy client costs one signature check per token.
import {
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from "jose";
import type { TenantClaims } from "../config.js";
import { AppError } from "../errors.js";

export interface Tenant {
  readonly team: string;
  readonly project: string;
  readonly environment: string;
  /** The token's `sub`, when it has one (who did it, in audit events). */
  readonly subject: string | null;
}

export interface VerifiedToken {
  readonly tenant: Tenant;
  /** The token's `exp`, in ms since the epoch: nothing derived from it may outlive it. */
  readonly expiresAtMs: number;
}

export interface TokenVerifier {
  /** The token's tenant; throws AppError invalid_token (401) or auth_unavailable (503). */
  verify(token: string): Promise<VerifiedToken>;
}

export interface VerifierOptions {
  readonly keys: JWTVerifyGetKey;
  readonly issuers: readonly string[];
  readonly audiences: readonly string[];
  readonly claims: TenantClaims;
  readonly clockToleranceSeconds: number;
  readonly now: () => number;
  /** Most tokens remembered at once. */
  readonly cacheSize?: number;
}

const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"];

export function remoteKeySet(jwksUrl: string): JWTVerifyGetKey {
  return createRemoteJWKSet(new URL(jwksUrl), {
    timeoutDuration: 5000,
    cooldownDuration: 30_000,
    cacheMaxAge: 10 * 60_000,
  });
}

export function createTokenVerifier(opts: VerifierOptions): TokenVerifier {
  const cache = new Map<string, VerifiedToken>();
  const cacheSize = opts.cacheSize ?? 10_000;

  const tenantOf = (payload: JWTPayload): Tenant => {
    const claim = (name: string): string => {
      const v = payload[name];
      if (typeof v !== "string" || v.length === 0 || v.length > 256) {
        throw new AppError("invalid_token", { message: `The token has no valid "${name}" claim.` });
      }
      return v;
    };
    const sub = payload.sub;
    return {
      team: claim(opts.claims.team),
      project: claim(opts.claims.project),
      environment: claim(opts.claims.environment),
      subject: typeof sub === "string" && sub.length <= 256 ? sub : null,
    };
  };

  return {
    async verify(token) {
      const now = opts.now();
      const hit = cache.get(token);
      if (hit && hit.expiresAtMs > now) return hit;
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, opts.keys, {
          issuer: [...opts.issuers],
          audience: [...opts.audiences],
          algorithms: ALGORITHMS,
          clockTolerance: opts.clockToleranceSeconds,
          requiredClaims: ["exp"],
          currentDate: new Date(now),
        }));
      } catch (err) {
        throw translateJoseError(err);
      }
      // jose checked that `exp` is there (requiredClaims) and a number.
      const verified = { tenant: tenantOf(payload), expiresAtMs: Number(payload.exp) * 1000 };
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      cache.set(token, verified);
      return verified;
    },
  };
}

/** jose failures: a bad token is 401; keys that cannot be fetched are 503 (retryable). */
function translateJoseError(err: unknown): AppError {
  if (
    err instanceof joseErrors.JWKSTimeout ||
    err instanceof joseErrors.JWKSInvalid ||
    !(err instanceof joseErrors.JOSEError) ||
    (err.code === "ERR_JOSE_GENERIC" && /JSON Web Key Set/i.test(err.message))
  ) {
    return new AppError("auth_unavailable", { cause: err });
  }
  return new AppError("invalid_token", { cause: err });
}

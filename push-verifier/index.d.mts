// Types of index.mjs: the push verifier an app uses to check that a push came from its own
// vqs queue (README, "Consume by push"; docs/operations.md, "Push delivery").
import type { JWTVerifyGetKey } from "jose";

export interface PushVerifierOptions {
  /** The gateway's JWKS (GET /.well-known/jwks.json); or give `gatewayUrl`. */
  readonly jwksUrl?: string;
  /** The gateway's base URL: its /.well-known/jwks.json is used. */
  readonly gatewayUrl?: string;
  /** The tokens' `iss`: the gateway's push issuer, `urn:vqs:<region>`. */
  readonly issuer: string;
  /** The app's own namespace, `team/project/environment[/deployment]` (parts percent-encoded). */
  readonly namespace: string;
  /**
   * The push URL(s) the group's settings name (the token's `aud`); by default the request's
   * own URL, which is that URL unless a proxy in front of the app rewrites it.
   */
  readonly audience?: string | readonly string[] | ((request: Request) => string | string[]);
  /** Leeway for `exp` and `iat`; default 5. */
  readonly clockToleranceSeconds?: number;
  /** How long the fetched key set is kept; default 10 minutes. */
  readonly cacheMaxAgeMs?: number;
  /** The least time between two fetches of the key set; default 30 s. */
  readonly cooldownMs?: number;
  /** Keys to verify with instead of fetching the JWKS (tests). */
  readonly keys?: JWTVerifyGetKey;
}

/** What a verified push is about. */
export interface VerifiedPush {
  /** `team/project/environment[/deployment]`, parts percent-encoded. */
  readonly namespace: string;
  readonly topic: string;
  readonly group: string;
}

export interface PushVerifier {
  /** Resolves for a push from the app's namespace; rejects with a PushVerificationError. */
  verify(request: Request): Promise<VerifiedPush>;
}

export type PushRefusal =
  | "missing_token"
  | "bad_signature"
  | "expired"
  | "wrong_iss"
  | "wrong_aud"
  | "wrong_sub"
  | `wrong_${string}`;

export class PushVerificationError extends Error {
  readonly reason: PushRefusal;
  constructor(reason: PushRefusal, message: string, cause?: unknown);
}

export function createPushVerifier(options: PushVerifierOptions): PushVerifier;

/** Answers 401 to a push that does not verify; calls `handler` with every other. */
export function verifiedPushHandler<A extends unknown[]>(
  handler: (request: Request, ...rest: A) => Promise<Response>,
  verifier: PushVerifier,
): (request: Request, ...rest: A) => Promise<Response>;

// Checks that a push came from the app's own vqs queue, for the app that receives it: the JWT in
// `Authorization: Bearer` (ES256) against the gateway's GET /.well-known/jwks.json (cached by
// jose; a key ID it does not know yet makes it fetch the set again, so rotated keys are picked
// up), its `iss` (`urn:vqs:<region>`), its `aud` (the push URL the
// group's settings name), its `exp`, and its `sub`: namespace, topic and group, each
// URI-encoded and joined by "/". The namespace must be the app's own, and the topic and group
// the ones the CloudEvent's headers name, so that a push another tenant points at this app's
// URL, or a token lifted from one group's push, is refused. Plain JavaScript (types in
// index.d.mts), so an app runs it as it is; its one dependency is `jose`.
import { createRemoteJWKSet, errors, jwtVerify } from "jose";

/** Why a push was refused (its `reason` is a short stable word; the message says more). */
export class PushVerificationError extends Error {
  /** @param {string} reason @param {string} message @param {unknown} [cause] */
  constructor(reason, message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "PushVerificationError";
    this.reason = reason;
  }
}

/** The `Vqs-Namespace` form (`team/project/environment[/deployment]`, parts percent-encoded). */
function namespaceParts(namespace) {
  const parts = String(namespace).split("/");
  if (parts.length < 3 || parts.length > 4 || parts.slice(0, 3).some((p) => p === "")) {
    throw new TypeError(
      `namespace must look like team/project/environment[/deployment] (got "${namespace}")`,
    );
  }
  // Normalized as the gateway encodes each part (encodeURIComponent of the decoded part).
  const norm = parts.map((p) => encodeURIComponent(decodeURIComponent(p)));
  return [norm[0], norm[1], norm[2], norm[3] ?? ""];
}

/** The URL the push was sent to, as the app sees it (no fragment). */
function requestAudience(request) {
  const u = new URL(request.url);
  return `${u.origin}${u.pathname}${u.search}`;
}

/**
 * Makes a verifier. Options: `jwksUrl` (or `gatewayUrl`, whose /.well-known/jwks.json is
 * used), `issuer`, `namespace`, `audience` (a URL, a list, or a function of the request; by
 * default the request's own URL), `clockToleranceSeconds` (default 5), `fetch` options for jose
 * (`cacheMaxAgeMs`, `cooldownMs`).
 */
export function createPushVerifier(options) {
  const jwksUrl =
    options.jwksUrl ??
    (options.gatewayUrl ? new URL("/.well-known/jwks.json", options.gatewayUrl).href : null);
  if (!jwksUrl) throw new TypeError("createPushVerifier needs jwksUrl or gatewayUrl");
  if (!options.issuer)
    throw new TypeError("createPushVerifier needs the issuer (urn:vqs:<region>)");
  const ns = namespaceParts(options.namespace);
  const keys =
    options.keys ??
    createRemoteJWKSet(new URL(jwksUrl), {
      cacheMaxAge: options.cacheMaxAgeMs ?? 10 * 60_000,
      cooldownDuration: options.cooldownMs ?? 30_000,
    });
  const audienceOf =
    typeof options.audience === "function"
      ? options.audience
      : options.audience !== undefined
        ? () => options.audience
        : requestAudience;

  return {
    /**
     * Resolves with the push's namespace, topic and group, or rejects with a
     * PushVerificationError.
     */
    async verify(request) {
      const header = request.headers.get("authorization") ?? "";
      const m = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(header);
      if (!m) throw new PushVerificationError("missing_token", "the push carries no Bearer JWT");
      let payload;
      try {
        ({ payload } = await jwtVerify(m[1], keys, {
          issuer: options.issuer,
          audience: audienceOf(request),
          algorithms: ["ES256"],
          typ: "JWT",
          requiredClaims: ["exp", "sub"],
          clockTolerance: options.clockToleranceSeconds ?? 5,
        }));
      } catch (err) {
        const reason =
          err instanceof errors.JWTExpired
            ? "expired"
            : err instanceof errors.JWTClaimValidationFailed
              ? `wrong_${err.claim}`
              : "bad_signature";
        throw new PushVerificationError(reason, `the push's JWT is not valid: ${err.message}`, err);
      }
      const sub = String(payload.sub).split("/");
      if (sub.length !== 6 || ns.some((part, i) => sub[i] !== part)) {
        throw new PushVerificationError(
          "wrong_sub",
          "the push is for another namespace than this app's",
        );
      }
      const topic = decodeURIComponent(sub[4]);
      const group = decodeURIComponent(sub[5]);
      const headerTopic = request.headers.get("ce-vqsqueuename");
      const headerGroup = request.headers.get("ce-vqsconsumergroup");
      if (
        (headerTopic !== null && headerTopic !== topic) ||
        (headerGroup !== null && headerGroup !== group)
      ) {
        throw new PushVerificationError(
          "wrong_sub",
          "the push's JWT is for another topic or consumer group than the push names",
        );
      }
      return { namespace: ns.slice(0, ns[3] === "" ? 3 : 4).join("/"), topic, group };
    },
  };
}

/**
 * Wraps a Fetch-style push handler (`@vercel/queue`'s `handleCallback(...)`, or Workflow's
 * route): a push that does not verify is answered 401 and never reaches it.
 */
export function verifiedPushHandler(handler, verifier) {
  return async (request, ...rest) => {
    try {
      await verifier.verify(request);
    } catch (err) {
      if (!(err instanceof PushVerificationError)) throw err;
      return Response.json(
        { error: { code: "push_not_verified", reason: err.reason } },
        { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } },
      );
    }
    return handler(request, ...rest);
  };
}

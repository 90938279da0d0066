// The JWT each push carries (`Authorization: Bearer`), so an app can check that a push came from
// its queue: ES256, `iss` the service, `aud` the push URL, `sub` the namespace, topic and group,
// a short `exp`. The signing keys are derived from VQS_RECEIPT_SECRET, the region and a key ID
// (HKDF-SHA256 to a P-256 scalar), so every gateway of a region signs with the same keys and no
// new secret needs distributing; GET /.well-known/jwks.json publishes their public halves.
// Rotation: VQS_PUSH_SIGNING_KEY_IDS lists key IDs, the first signs, all are published
// (docs/operations.md, "Push delivery").
import { createECDH, createPrivateKey, hkdfSync, type KeyObject } from "node:crypto";
import { SignJWT, type JWK } from "jose";
import type { PushSigner } from "../queue/push-delivery/push-ports.js";

export interface PushSigningOptions {
  readonly secret: string;
  readonly region: string;
  /** Key IDs: the first signs, every one is published. */
  readonly keyIds: readonly string[];
  readonly issuer: string;
  /** How long a token is valid. */
  readonly lifetimeSeconds: number;
  readonly now?: () => number;
}

interface SigningKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly publicJwk: JWK;
}

/** P-256's group order: a derived scalar must be below it (and above 0). */
const P256_ORDER = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

export class PushSigningKeys implements PushSigner {
  readonly #o: PushSigningOptions;
  readonly #keys: readonly SigningKey[];
  /** Tokens by audience and subject, reused for a while (one signature per group per minute). */
  readonly #tokens = new Map<string, { token: string; untilMs: number }>();

  constructor(options: PushSigningOptions) {
    if (options.keyIds.length === 0) throw new Error("push signing needs at least one key ID");
    this.#o = options;
    this.#keys = options.keyIds.map((kid) => deriveKey(options.secret, options.region, kid));
  }

  /** The public keys as a JWK Set (GET /.well-known/jwks.json). */
  jwks(): { keys: JWK[] } {
    return { keys: this.#keys.map((k) => k.publicJwk) };
  }

  async sign(audience: string, subject: string): Promise<string> {
    const nowMs = (this.#o.now ?? Date.now)();
    const cacheKey = `${audience}\n${subject}`;
    const cached = this.#tokens.get(cacheKey);
    if (cached && cached.untilMs > nowMs) return cached.token;
    const key = this.#keys[0]!;
    const iat = Math.floor(nowMs / 1000);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT" })
      .setIssuer(this.#o.issuer)
      .setAudience(audience)
      .setSubject(subject)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.#o.lifetimeSeconds)
      .sign(key.privateKey);
    // Reused for at most a fifth of its lifetime, so a token always has most of it left.
    if (this.#tokens.size >= 10_000) this.#tokens.clear(); // bounded: one entry per group
    this.#tokens.set(cacheKey, { token, untilMs: nowMs + (this.#o.lifetimeSeconds * 1000) / 5 });
    return token;
  }
}

function deriveKey(secret: string, region: string, kid: string): SigningKey {
  for (let i = 0; ; i++) {
    const d = Buffer.from(
      hkdfSync("sha256", secret, `vqs push signing key ${region}`, `${kid} ${i}`, 32),
    );
    const scalar = BigInt(`0x${d.toString("hex")}`);
    if (scalar === 0n || scalar >= P256_ORDER) continue; // about 2^-32 likely: derive again
    const ecdh = createECDH("prime256v1");
    ecdh.setPrivateKey(d);
    const pub = ecdh.getPublicKey(); // 0x04 | x (32) | y (32)
    const publicJwk: JWK = {
      kty: "EC",
      crv: "P-256",
      x: pub.subarray(1, 33).toString("base64url"),
      y: pub.subarray(33, 65).toString("base64url"),
      kid,
      alg: "ES256",
      use: "sig",
    };
    const privateKey = createPrivateKey({
      key: { ...publicJwk, d: d.toString("base64url") },
      format: "jwk",
    });
    return { kid, privateKey, publicJwk };
  }
}

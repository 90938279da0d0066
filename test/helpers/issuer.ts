// A test OIDC issuer: an RS256 key served as a JWKS over real HTTP (so the gateway's remote key
// set, its caching and its outage handling are exercised), and tokens signed with it.
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { createServer, type Server } from "node:http";
import { makeNamespace } from "../../src/queue/namespace.js";

export const ISSUER = "https://oidc.test.local/team_a";
export const AUDIENCE = "https://test.local/team_a";

/** Claims of a test token; values may be of any type, to test malformed tokens. */
export type Claims = Record<string, unknown>;

export interface TestIssuer {
  readonly jwksUrl: string;
  token(
    claims?: Claims,
    opts?: { expiresIn?: string; issuer?: string; audience?: string },
  ): Promise<string>;
  /** A correctly signed token with no `exp`: it must not be valid for ever. */
  tokenWithoutExpiry(): Promise<string>;
  /** Signs with a key the JWKS does not publish. */
  foreignToken(claims?: Claims): Promise<string>;
  /** Makes the JWKS endpoint answer 500 (true) or work again (false). */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

export const TEAM_A: Claims = {
  owner_id: "team_a",
  project_id: "prj_1",
  environment: "production",
};

/** The namespace a TEAM_A token without a deployment ID publishes in. */
export const TEAM_A_NAMESPACE = makeNamespace("team_a", "prj_1", "production", null);

/** `host`: the address to serve the JWKS on (default loopback). */
export async function startIssuer(options: { host?: string } = {}): Promise<TestIssuer> {
  const host = options.host ?? "127.0.0.1";
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const foreign = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  let down = false;
  const server: Server = createServer((_req, res) => {
    if (down) {
      res.writeHead(500).end("down");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;

  const sign = (
    key: CryptoKey,
    claims: Claims,
    o: { expiresIn?: string; issuer?: string; audience?: string } = {},
  ) =>
    new SignJWT({ ...TEAM_A, ...claims })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(o.issuer ?? ISSUER)
      .setAudience(o.audience ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(o.expiresIn ?? "1h")
      .sign(key);

  return {
    jwksUrl: `http://${host}:${port}/.well-known/jwks`,
    token: (claims = {}, o = {}) => sign(privateKey, claims, o),
    foreignToken: (claims = {}) => sign(foreign.privateKey, claims),
    tokenWithoutExpiry: () =>
      new SignJWT({ ...TEAM_A })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .sign(privateKey),
    setDown: (d) => {
      down = d;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// The benchmark's token issuer: an RS256 key served as a JWKS on loopback (the gateways fetch it
// once and cache it, as in production), one long-lived token for every request, and tokens for
// other namespaces (bench:tenants).
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { createServer } from "node:http";

export const BENCH_ISSUER = "https://oidc.bench.local/team_bench";
export const BENCH_AUDIENCE = "https://bench.local/team_bench";

export interface BenchIssuer {
  readonly jwksUrl: string;
  readonly token: string;
  /** A token for `claims` over the bench's own (team_bench/prj_bench/production). */
  sign(claims: Record<string, unknown>, expiresIn?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startBenchIssuer(): Promise<BenchIssuer> {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "bench", alg: "RS256", use: "sig" };
  const body = JSON.stringify({ keys: [jwk] });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  const sign = (claims: Record<string, unknown>, expiresIn = "6h") =>
    new SignJWT({
      owner_id: "team_bench",
      project_id: "prj_bench",
      environment: "production",
      ...claims,
    })
      .setProtectedHeader({ alg: "RS256", kid: "bench" })
      .setIssuer(BENCH_ISSUER)
      .setAudience(BENCH_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(expiresIn)
      .sign(privateKey);
  return {
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    token: await sign({}),
    sign,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// Development auth: with no OIDC settings outside production, the service trusts a local RS256
// key kept in the data directory, and prints tokens signed with it (`npm run token` too). The
// tokens look like the hosted platform's OIDC tokens, so the same claims and checks apply.
import { createLocalJWKSet, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { JWTVerifyGetKey } from "jose";

/** Where development keeps the embedded server's store and its keys, unless `--data-dir` says. */
export const DEV_DATA_DIR = ".data";

export const DEV_ISSUER = "https://oidc.vqs.local/dev";
export const DEV_AUDIENCE = "https://vqs.local/dev";

export interface DevClaims {
  readonly owner_id: string;
  readonly project_id: string;
  readonly environment: string;
}

export const DEV_CLAIMS: DevClaims = {
  owner_id: "team_dev",
  project_id: "prj_dev",
  environment: "development",
};

interface DevState {
  readonly kid: string;
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
  readonly receiptSecret: string;
}

export interface DevIssuer {
  readonly keys: JWTVerifyGetKey;
  readonly receiptSecret: string;
  issue(claims?: Partial<DevClaims>, ttlSeconds?: number): Promise<string>;
}

async function loadOrCreate(dataDir: string): Promise<DevState> {
  const file = join(dataDir, "dev-auth.json");
  try {
    return JSON.parse(await readFile(file, "utf8")) as DevState;
  } catch {
    const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
    const state: DevState = {
      kid: randomBytes(8).toString("hex"),
      privateJwk: await exportJWK(privateKey),
      publicJwk: await exportJWK(publicKey),
      receiptSecret: randomBytes(32).toString("base64url"),
    };
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, JSON.stringify(state), { mode: 0o600 });
    return state;
  }
}

export async function devIssuer(dataDir: string): Promise<DevIssuer> {
  const state = await loadOrCreate(dataDir);
  const privateKey = await importJWK(state.privateJwk, "RS256");
  const keys = createLocalJWKSet({ keys: [{ ...state.publicJwk, kid: state.kid, alg: "RS256" }] });
  return {
    keys,
    receiptSecret: state.receiptSecret,
    issue: (claims = {}, ttlSeconds = 24 * 3600) =>
      new SignJWT({ ...DEV_CLAIMS, ...claims })
        .setProtectedHeader({ alg: "RS256", kid: state.kid })
        .setIssuer(DEV_ISSUER)
        .setAudience(DEV_AUDIENCE)
        .setSubject(`owner:${claims.owner_id ?? DEV_CLAIMS.owner_id}`)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(privateKey),
  };
}

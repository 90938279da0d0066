// GET /.well-known/jwks.json: the public keys that verify the JWT every push carries (no token
// needed: apps fetch it to check that a push came from their queue). Cacheable for a few
// minutes; during a key rotation both keys are listed (docs/operations.md, "Push delivery").
import type { FastifyInstance } from "fastify";
import type { JWK } from "jose";
import { JWKS } from "../../openapi/operations.js";

export function jwksRoute(app: FastifyInstance, jwks: () => { keys: JWK[] }): void {
  app.get("/.well-known/jwks.json", { schema: JWKS }, async (_request, reply) =>
    reply.header("cache-control", "public, max-age=300").send(jwks()),
  );
}

// The route schemas of the routes outside /api/v3: probes, the push signing keys and this
// document (GET /metrics is on the metrics port, outside this API: http/metrics-app.ts). None
// needs a token (`security: []`). Documentation only (plugin.ts).
import { errorResponses, json } from "./shared.js";

const OPEN = { tags: ["operations"], security: [] };

export const HEALTHZ = {
  ...OPEN,
  operationId: "liveness",
  summary: "Liveness",
  description: "The process answers; no NATS needed.",
  response: {
    200: json("Alive.", {
      type: "object",
      required: ["status"],
      properties: { status: { const: "ok" } },
    }),
  },
};

export const READYZ = {
  ...OPEN,
  operationId: "readiness",
  summary: "Readiness",
  description: "200 only while JetStream answers.",
  response: {
    200: json("Ready.", {
      type: "object",
      required: ["status"],
      properties: { status: { const: "ready" } },
    }),
    ...errorResponses(["storage_unavailable"], { auth: false }),
  },
};

export const JWKS = {
  ...OPEN,
  tags: ["push"],
  operationId: "pushSigningKeys",
  summary: "Push signing keys",
  description:
    "The public keys (JWKS) that verify the JWT every push carries; during a key rotation both keys are listed. Cacheable for 5 minutes.",
  response: {
    200: json("The keys.", {
      type: "object",
      required: ["keys"],
      properties: {
        keys: {
          type: "array",
          items: {
            type: "object",
            required: ["kty", "kid"],
            properties: { kty: { type: "string" }, kid: { type: "string" } },
            additionalProperties: true,
          },
        },
      },
    }),
  },
};

export const OPENAPI = {
  ...OPEN,
  operationId: "openApiDocument",
  summary: "This document",
  description: "The OpenAPI 3.1 document of this API (docs/openapi.json holds the same).",
  response: { 200: json("The OpenAPI 3.1 document.", { type: "object" }) },
};

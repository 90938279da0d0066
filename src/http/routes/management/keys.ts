// GET /api/v3/topic/{topic}/consumer/{group}/keys?limit=: the group's busiest flow-control keys,
// in flight and waiting, region-wide (src/queue/management/busiest-keys.ts).
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_KEYS } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";

export function keysRoute(app: FastifyInstance, management: ManagementService): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topic/:topic/consumer/:group/keys", { schema: LIST_KEYS }, async (request) => {
      const { limit = LIMITS.busiestKeysLimit.default } = request.query;
      return management.keys({ namespace: request.namespace, ...request.params }, limit);
    });
}

// GET /api/v3/namespaces (operators only): every namespace with topics in this region.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../../errors.js";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_NAMESPACES } from "../../openapi/management-routes.js";
import { namespaceHeader } from "../../../queue/namespace.js";

export function namespacesRoute(app: FastifyInstance, management: ManagementService): void {
  app.get("/api/v3/namespaces", { schema: LIST_NAMESPACES }, async (request) => {
    if (!request.identity.operator) throw new AppError("operator_only");
    const all = await management.namespaces();
    return {
      namespaces: all.map(({ namespace: ns, topics, ...usage }) => ({
        team: ns.team,
        project: ns.project,
        environment: ns.environment,
        deploymentId: ns.deployment,
        label: namespaceHeader(ns),
        topics,
        storage: management.storage(ns, usage),
      })),
    };
  });
}

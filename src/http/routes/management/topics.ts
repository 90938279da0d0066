// GET /api/v3/topics?cursor=&limit=: the namespace's topics by name, a page at a time.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../../errors.js";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_TOPICS } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";
import { queryInt, queryString } from "./query.js";

export function topicsRoute(app: FastifyInstance, management: ManagementService): void {
  app.get("/api/v3/topics", { schema: LIST_TOPICS }, async (request) => {
    const limit = queryInt(request, "limit", LIMITS.topicsPageLimit);
    const cursor = queryString(request, "cursor");
    if (cursor !== null && !/^[A-Za-z0-9_-]{1,255}$/.test(cursor)) {
      throw new AppError("invalid_query", { message: "`cursor` is not one this API gave." });
    }
    return management.listTopics(request.namespace, cursor, limit);
  });
}

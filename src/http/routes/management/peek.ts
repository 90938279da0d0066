// GET /api/v3/topic/{topic}/messages?after=&limit=&payload=: the messages consumer groups see,
// read without leasing them.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../../errors.js";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { PEEK } from "../../openapi/management-routes.js";
import { topicOf } from "../../params.js";
import { LIMITS } from "../../../queue/limits.js";
import { queryInt, queryString } from "./query.js";

export function peekRoute(app: FastifyInstance, management: ManagementService): void {
  app.get("/api/v3/topic/:topic/messages", { schema: PEEK }, async (request) => {
    const limit = queryInt(request, "limit", LIMITS.peekLimit);
    const payload = queryString(request, "payload") ?? "preview";
    if (payload !== "preview" && payload !== "full") {
      throw new AppError("invalid_query", { message: "`payload` must be preview or full." });
    }
    return management.peek(
      topicOf(request),
      queryString(request, "after"),
      limit,
      payload === "full",
    );
  });
}

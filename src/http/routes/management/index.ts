// The management routes (docs/api.md, "Management API"), one file per operation.
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import type { AuditLog } from "./audit.js";
import { consumersRoute } from "./consumers.js";
import { deleteGroupRoute } from "./delete-group.js";
import { deleteTopicRoute } from "./delete-topic.js";
import { keysRoute } from "./keys.js";
import { namespacesRoute } from "./namespaces.js";
import { peekRoute } from "./peek.js";
import { purgeRoute } from "./purge.js";
import { seekRoute } from "./seek.js";
import { topicRoute } from "./topic.js";
import { topicsRoute } from "./topics.js";

export function managementRoutes(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  topicsRoute(app, management);
  topicRoute(app, management);
  consumersRoute(app, management);
  peekRoute(app, management);
  deleteTopicRoute(app, management, audit);
  purgeRoute(app, management, audit);
  deleteGroupRoute(app, management, audit);
  seekRoute(app, management, audit);
  keysRoute(app, management);
  namespacesRoute(app, management);
}

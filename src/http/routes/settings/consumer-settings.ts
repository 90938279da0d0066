// The consumer settings resource: PUT, GET and DELETE /api/v3/topic/{topic or prefix*}/consumer/
// {group}/settings, and GET /api/v3/settings (every document of the namespace). Four thin
// handlers over SettingsService, kept in one file since they share the body shape. A PUT and a
// DELETE change where and how a group's messages go (a push URL among them): audited, as purges
// and deletes are.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { jsonBody } from "../../encoding/json-body.js";
import {
  DELETE_SETTINGS,
  GET_SETTINGS,
  LIST_SETTINGS,
  PUT_SETTINGS,
} from "../../openapi/settings-routes.js";
import { settingsBody } from "../../../queue/settings/consumer-settings.js";
import type { SettingsService } from "../../../queue/settings/settings-service.js";
import { param, settingsAddressOf } from "../../params.js";
import { audited, type AuditLog } from "../management/audit.js";

/** Largest settings body (a full document is well under 3 KiB). */
const MAX_BODY_BYTES = 16 * 1024;

export function consumerSettingsRoutes(
  app: FastifyInstance,
  settings: SettingsService,
  audit: AuditLog,
): void {
  const path = "/api/v3/topic/:topic/consumer/:group/settings";
  const target = (request: FastifyRequest) => ({
    topic: param(request, "topic"),
    group: param(request, "group"),
  });
  app.put(path, { bodyLimit: MAX_BODY_BYTES, schema: PUT_SETTINGS }, async (request) =>
    audited(audit, request, "put_settings", target(request), async () => {
      const at = settingsAddressOf(request);
      return settingsBody(await settings.put(at, jsonBody(request.body)));
    }),
  );
  app.get(path, { schema: GET_SETTINGS }, async (request) =>
    settingsBody(await settings.get(settingsAddressOf(request))),
  );
  app.delete(path, { schema: DELETE_SETTINGS }, async (request, reply) => {
    await audited(audit, request, "delete_settings", target(request), () =>
      settings.delete(settingsAddressOf(request)),
    );
    return reply.code(204).send();
  });
  app.get("/api/v3/settings", { schema: LIST_SETTINGS }, (request, reply) =>
    reply.send({ settings: settings.list(request.namespace).map(settingsBody) }),
  );
}

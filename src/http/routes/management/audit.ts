// Audit events of destructive management calls: who (the token's team, project, environment and
// subject, and whether an operator), in which namespace, what, on what, and how it ended. Logged
// through a logger of their own at info, whatever LOG_LEVEL says (but silent), with `audit: true`.
import type { FastifyRequest } from "fastify";
import { namespaceLabel } from "../../../queue/namespace.js";

export interface AuditLog {
  info(fields: Record<string, unknown>, message: string): void;
}

/** Runs a destructive call and records it (also when it fails). */
export async function audited<T>(
  log: AuditLog,
  request: FastifyRequest,
  action: string,
  target: Readonly<Record<string, string | number | null>>,
  run: () => Promise<T>,
): Promise<T> {
  const event = {
    audit: true,
    action,
    namespace: namespaceLabel(request.namespace),
    ...target,
    who: request.identity,
    requestId: request.id,
  };
  try {
    const result = await run();
    log.info({ ...event, outcome: "done" }, `audit: ${action}`);
    return result;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    log.info({ ...event, outcome: typeof code === "string" ? code : "error" }, `audit: ${action}`);
    throw err;
  }
}

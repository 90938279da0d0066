// Query parameters of the management routes: plain values, checked like the v3 headers (an
// integer is a base-10 integer within its bounds), 400 invalid_query naming the parameter.
import type { FastifyRequest } from "fastify";
import { AppError } from "../../../errors.js";

function raw(request: FastifyRequest, name: string): string | null {
  const v = (request.query as Record<string, unknown> | undefined)?.[name];
  if (v === undefined) return null;
  if (typeof v !== "string") {
    throw new AppError("invalid_query", { message: `\`${name}\` must be given once.` });
  }
  return v;
}

export function queryString(request: FastifyRequest, name: string): string | null {
  return raw(request, name);
}

export function queryInt(
  request: FastifyRequest,
  name: string,
  bounds: { min: number; max: number; default: number },
): number {
  const v = raw(request, name);
  if (v === null) return bounds.default;
  if (!/^\d+$/.test(v) || Number(v) < bounds.min || Number(v) > bounds.max) {
    throw new AppError("invalid_query", {
      message: `\`${name}\` must be an integer from ${bounds.min} to ${bounds.max}.`,
    });
  }
  return Number(v);
}

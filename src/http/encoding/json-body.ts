// JSON request bodies. The API scope hands every body over as bytes (message payloads must stay
// untouched), so the few routes that take JSON parse it here, whatever the Content-Type.
import { AppError } from "../../errors.js";

/** The body parsed as JSON; 400 invalid_request_body when it is not JSON. */
export function jsonBody(body: unknown): unknown {
  try {
    return JSON.parse(Buffer.isBuffer(body) ? body.toString("utf8") : "");
  } catch {
    throw new AppError("invalid_request_body");
  }
}

// The process logger: structured JSON (pino). Secrets never reach it in full: Authorization
// headers are redacted, and receipt handles in logged URLs are cut to a short prefix.
import type { IncomingMessage, ServerResponse } from "node:http";
import { pino, stdSerializers, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Shortens the receipt handle in a lease URL to its first 8 characters. */
export function redactUrl(url: string | undefined): string | undefined {
  return url?.replace(/(\/lease\/)([^/?]{8})[^/?]*/, "$1$2…");
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: "vqs" },
    serializers: {
      req: (req: IncomingMessage) => ({
        method: req.method,
        url: redactUrl(req.url),
        remoteAddress: req.socket?.remoteAddress,
      }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
      err: stdSerializers.err,
    },
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization"],
      censor: "[redacted]",
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

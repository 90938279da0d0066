// The process logger: structured JSON (pino). Secrets never reach it in full.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "vqs" },
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization"],
      censor: "[redacted]",
    },
  });
}

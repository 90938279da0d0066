// The process logger: structured JSON (pino). Secrets never reach it in full: Authorization
// headers are redacted, and receipt handles in logged URLs are cut to a short prefix.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import {
  pino,
  stdSerializers,
  type ChildLoggerOptions,
  type DestinationStream,
  type Logger,
} from "pino";

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

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";
type Bindings = Record<string, unknown>;

/**
 * A request's logger, made on its first use. Fastify asks for a child logger per request (to bind
 * the request ID), and pino's child() serializes its bindings at once, although at the usual
 * levels (info, warn) a successful request never logs. Methods of a level the parent has switched
 * off return at once, as pino's own do.
 */
class LazyChildLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger & Pick<Logger, "isLevelEnabled">;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #made: FastifyBaseLogger | null = null;

  constructor(
    parent: FastifyBaseLogger & Pick<Logger, "isLevelEnabled">,
    bindings: Bindings,
    options: ChildLoggerOptions,
  ) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #child(): FastifyBaseLogger {
    return (this.#made ??= this.#parent.child(this.#bindings, this.#options));
  }

  #log(level: Level, args: unknown[]): void {
    if (this.#made === null && !this.#parent.isLevelEnabled(level)) return;
    const child = this.#child();
    Reflect.apply(child[level], child, args);
  }

  get level(): string {
    return this.#made?.level ?? this.#parent.level;
  }
  set level(level: string) {
    this.#child().level = level;
  }
  // Methods on the prototype, not arrow-function fields: one of these is made per request.
  fatal(...args: unknown[]): void {
    this.#log("fatal", args);
  }
  error(...args: unknown[]): void {
    this.#log("error", args);
  }
  warn(...args: unknown[]): void {
    this.#log("warn", args);
  }
  info(...args: unknown[]): void {
    this.#log("info", args);
  }
  debug(...args: unknown[]): void {
    this.#log("debug", args);
  }
  trace(...args: unknown[]): void {
    this.#log("trace", args);
  }
  silent(): void {
    // Nothing: the level that logs nothing.
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#child().child(bindings, options);
  }
}

/** Fastify's childLoggerFactory: lazy request loggers on a pino parent (eager with a per-route
 * log level, which only a real child can carry). */
export function lazyChildLoggerFactory(
  this: unknown,
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  const parent = logger as FastifyBaseLogger & Partial<Pick<Logger, "isLevelEnabled">>;
  if (options.level !== undefined || typeof parent.isLevelEnabled !== "function") {
    return logger.child(bindings, options);
  }
  return new LazyChildLogger(
    parent as FastifyBaseLogger & Pick<Logger, "isLevelEnabled">,
    bindings,
    options,
  );
}

// `vqs publish`: one message from --data, a file or stdin (streamed as it is read, never whole in
// memory: a file of 100 MB goes out as the socket takes it, with a progress bar by bytes on a
// terminal), or the same payload --count times with a progress bar by messages. Headers as the
// API takes them.
import type { Command } from "commander";
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import type { ApiClient, PublishOptions, PublishResult } from "../api-client.js";
import type { Context } from "../context.js";
import { UnreachableError, UsageError } from "../errors.js";
import { checkHeaderValue, checkName, LIMITS, parseInteger } from "../options.js";
import { progressBar, type Progress } from "../terminal/progress.js";
import { counted, fileBody } from "../transfer/file-body.js";
import { StallTimeout } from "../transfer/stall-timeout.js";
import { examples, type ContextOf } from "./help.js";

interface PublishFlags {
  readonly data?: string;
  readonly file?: string;
  readonly contentType?: string;
  readonly delay?: string;
  readonly ttl?: string;
  readonly key?: string;
  readonly count?: string;
}

/** `publish --count --json`: how many were published, and their IDs in order. */
export interface PublishReport {
  readonly published: number;
  readonly deferred: number;
  readonly messageIds: string[];
}

/** Requests in flight at once for --count. */
const PARALLEL = 8;

export function publishCommand(program: Command, contextOf: ContextOf): void {
  const L = LIMITS;
  const cmd = program
    .command("publish")
    .description(
      "publish a message: the payload from --data, --file, or stdin (`-` or nothing given; " +
        "streamed as it is read)",
    )
    .argument("<topic>", "the topic")
    .argument("[source]", "`-`: read the payload from stdin (the default without --data/--file)")
    .option("--data <text>", "the payload, as UTF-8 text")
    .option("--file <path>", "read the payload from this file")
    .option("--content-type <type>", "its Content-Type (default application/octet-stream)")
    .option(
      "--delay <seconds>",
      `deliver it this many seconds from now, ${L.delaySeconds.min}..${L.delaySeconds.max}`,
    )
    .option(
      "--ttl <seconds>",
      `keep it this long (retention), ${L.retentionSeconds.min}..${L.retentionSeconds.max} ` +
        `(server default ${L.retentionSeconds.default})`,
    )
    .option(
      "--key <idempotency-key>",
      "an idempotency key: a second publish with it is a duplicate",
    )
    .option("--count <n>", "publish the payload this many times (a progress bar on a terminal)")
    .action(async (topic: string, source: string | undefined, _o: PublishFlags, c: Command) => {
      await runPublish(contextOf(c), topic, source, c.opts<PublishFlags>());
    });
  examples(cmd, [
    `vqs publish orders --data '{"id":1}' --content-type application/json`,
    "vqs publish orders --file order.json --content-type application/json --delay 60",
    "cat big.bin | vqs publish uploads - --key upload-42",
    "vqs publish load-test --data x --count 10000",
  ]);
}

async function runPublish(
  ctx: Context,
  topic: string,
  source: string | undefined,
  o: PublishFlags,
) {
  checkName("topic", topic);
  const L = LIMITS;
  if (source !== undefined && source !== "-") {
    throw new UsageError(
      `unexpected argument "${source}": the payload comes from --file, --data or - (stdin)`,
    );
  }
  if ([o.data !== undefined, o.file !== undefined, source === "-"].filter(Boolean).length > 1) {
    throw new UsageError("give one of --data, --file and - (stdin)");
  }
  const count =
    o.count === undefined ? null : parseInteger("--count", o.count, 1, Number.MAX_SAFE_INTEGER);
  if (count !== null && o.key !== undefined && count > 1) {
    throw new UsageError("--key with --count: every message after the first would be a duplicate");
  }
  const options: PublishOptions = {
    ...(o.contentType !== undefined ? { contentType: o.contentType } : {}),
    ...(o.delay !== undefined
      ? { delaySeconds: parseInteger("--delay", o.delay, L.delaySeconds.min, L.delaySeconds.max) }
      : {}),
    ...(o.ttl !== undefined
      ? {
          retentionSeconds: parseInteger(
            "--ttl",
            o.ttl,
            L.retentionSeconds.min,
            L.retentionSeconds.max,
          ),
        }
      : {}),
    ...(o.key !== undefined ? { idempotencyKey: o.key } : {}),
  };
  if (o.key !== undefined) checkHeaderValue("--key", o.key, L.idempotencyKeyMaxLength);
  if (o.contentType !== undefined) {
    checkHeaderValue("--content-type", o.contentType, L.contentTypeMaxLength);
  }
  if (o.data === undefined && o.file === undefined && ctx.stdin.isTTY === true) {
    ctx.out.note("reading the payload from stdin (end it with Ctrl-D)");
  }
  const api = ctx.api();
  const from: Source =
    o.data !== undefined
      ? { kind: "bytes", data: Buffer.from(o.data) }
      : o.file !== undefined
        ? { kind: "file", path: o.file }
        : { kind: "stdin" };

  if (count === null) {
    // One message: a file or stdin is streamed, never held whole.
    const r = await publishOne(ctx, api, topic, from, options, true);
    if (ctx.out.json) ctx.out.printJson(r);
    else
      ctx.out.print(
        "deferred" in r
          ? "deferred (the region is recovering; it will be published)"
          : `published  ${r.messageId}`,
      );
    return;
  }

  // The same payload again and again: a file is read anew for each (stdin can be read once only).
  const again: Source =
    from.kind === "stdin" ? { kind: "bytes", data: await readStdin(ctx) } : from;
  const report = await publishMany(ctx, api, topic, again, options, count);
  if (ctx.out.json) ctx.out.printJson(report);
  else {
    const deferred = report.deferred ? ` (${report.deferred} deferred)` : "";
    ctx.out.print(`published ${report.published} messages to ${topic}${deferred}`);
  }
}

/** Where the payload comes from. */
type Source =
  | { readonly kind: "bytes"; readonly data: Buffer }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "stdin" };

/** A file at least this large gets a progress bar by bytes (on a terminal). */
const BAR_FROM_BYTES = 4 * 1024 * 1024;
/** A streamed publish ends when no byte moved for this long (not at a fixed deadline). */
const STALL_MS = 30_000;

/**
 * One publish. A file or stdin is streamed; a file's size goes as Content-Length, so a gateway
 * refuses one over its limit (413) before it is sent. `bar`: a progress bar for a large file.
 */
async function publishOne(
  ctx: Context,
  api: ApiClient,
  topic: string,
  source: Source,
  options: PublishOptions,
  bar: boolean,
): Promise<PublishResult> {
  if (source.kind === "bytes") return api.publish(topic, source.data, options);
  const stall = new StallTimeout(STALL_MS);
  try {
    if (source.kind === "stdin") {
      const stdin = Readable.toWeb(Readable.from(ctx.stdin)) as ReadableStream<Uint8Array>;
      return await api.publish(
        topic,
        counted(stdin, () => stall.touch()),
        { ...options, stall },
      );
    }
    const handle = await openFile(ctx, source.path);
    let progress: Progress | null = null;
    let sent = 0;
    try {
      const body = await fileBody(handle, (n) => {
        stall.touch();
        sent += n;
        progress?.update(sent, body.size);
      });
      if (bar && body.size >= BAR_FROM_BYTES) {
        progress = progressBar(ctx.stderr, ctx.env, ctx.out.paintErr, Date.now, "bytes");
        progress?.update(0, body.size);
      }
      try {
        return await api.publish(topic, body.stream, { ...options, size: body.size, stall });
      } catch (err) {
        // A gateway refuses an over-limit file (413) before reading it and closes the
        // connection; the refusal can be lost under the upload (EPIPE, reset). Say so.
        if (err instanceof UnreachableError && /EPIPE|ECONNRESET|closed/.test(err.message)) {
          throw new UnreachableError(
            `${err.message}: the gateway closed the connection when ${sent} of ${body.size} ` +
              "bytes of the file were read; it refuses a body over its limit (VQS_MAX_MESSAGE_BYTES) that " +
              "way, and a publish cut off stores nothing",
            err.code,
            { cause: err },
          );
        }
        throw err;
      }
    } finally {
      progress?.stop();
      // The read stream closes the file at its end; this closes it after a failure too.
      await handle.close().catch(() => undefined);
    }
  } finally {
    stall.clear();
  }
}

async function publishMany(
  ctx: Context,
  api: ApiClient,
  topic: string,
  source: Source,
  options: PublishOptions,
  count: number,
): Promise<PublishReport> {
  const bar = progressBar(ctx.stderr, ctx.env, ctx.out.paintErr);
  const results: PublishResult[] = new Array<PublishResult>(count);
  let next = 0;
  let done = 0;
  bar?.update(0, count);
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await publishOne(ctx, api, topic, source, options, false);
      bar?.update(++done, count);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count) }, worker));
  } finally {
    bar?.stop();
  }
  const messageIds = results.flatMap((r) => ("messageId" in r ? [r.messageId] : []));
  return { published: count, deferred: count - messageIds.length, messageIds };
}

/** Standard input whole (for --count, which sends it again and again). */
async function readStdin(ctx: Context): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of ctx.stdin)
    chunks.push(typeof c === "string" ? Buffer.from(c) : Buffer.from(c));
  return Buffer.concat(chunks);
}

async function openFile(ctx: Context, file: string) {
  try {
    return await open(ctx.path(file), "r");
  } catch (err) {
    throw new UnreachableError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      "file_unreadable",
    );
  }
}

// `vqs publish`: one message from --data, a file or stdin (streamed as it is read), or the same
// payload --count times with a progress bar on a terminal. Headers as the API takes them.
import type { Command } from "commander";
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import type { ApiClient, PublishOptions, PublishResult } from "../api-client.js";
import type { Context } from "../context.js";
import { UnreachableError, UsageError } from "../errors.js";
import { checkName, LIMITS, parseInteger } from "../options.js";
import { progressBar } from "../terminal/progress.js";
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
  if (o.key !== undefined && (o.key.length < 1 || o.key.length > L.idempotencyKeyMaxLength)) {
    throw new UsageError(`--key must be 1..${L.idempotencyKeyMaxLength} characters`);
  }
  if (o.data === undefined && o.file === undefined && ctx.stdin.isTTY === true) {
    ctx.out.note("reading the payload from stdin (end it with Ctrl-D)");
  }
  const api = ctx.api();

  if (count === null) {
    // One message: a file or stdin is streamed, never held whole.
    const data = o.data !== undefined ? Buffer.from(o.data) : await stream(ctx, o.file);
    const r = await api.publish(topic, data, options);
    if (ctx.out.json) ctx.out.printJson(r);
    else
      ctx.out.print(
        r.deferred
          ? "deferred (the region is recovering; it will be published)"
          : `published  ${r.messageId}`,
      );
    return;
  }

  const payload = o.data !== undefined ? Buffer.from(o.data) : await readAll(ctx, o.file);
  const report = await publishMany(ctx, api, topic, payload, options, count);
  if (ctx.out.json) ctx.out.printJson(report);
  else {
    const deferred = report.deferred ? ` (${report.deferred} deferred)` : "";
    ctx.out.print(`published ${report.published} messages to ${topic}${deferred}`);
  }
}

async function publishMany(
  ctx: Context,
  api: ApiClient,
  topic: string,
  payload: Uint8Array,
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
      results[i] = await api.publish(topic, payload, options);
      bar?.update(++done, count);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count) }, worker));
  } finally {
    bar?.stop();
  }
  const messageIds = results.flatMap((r) => (r.messageId ? [r.messageId] : []));
  return { published: count, deferred: count - messageIds.length, messageIds };
}

/** A file's or stdin's bytes as a stream for fetch. */
async function stream(ctx: Context, file: string | undefined): Promise<ReadableStream<Uint8Array>> {
  if (file === undefined) {
    return Readable.toWeb(Readable.from(ctx.stdin)) as ReadableStream<Uint8Array>;
  }
  const handle = await openFile(ctx, file);
  // The read stream closes the file at its end.
  return Readable.toWeb(handle.createReadStream()) as ReadableStream<Uint8Array>;
}

async function readAll(ctx: Context, file: string | undefined): Promise<Buffer> {
  if (file !== undefined) {
    const handle = await openFile(ctx, file);
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }
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

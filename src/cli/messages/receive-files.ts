// `vqs receive --out <file>` and `--output-dir <dir>`: received bodies written to files as they
// stream in (multipart/mixed, never a whole body in memory), each under its final name only once
// whole, with its size and SHA-256; --ack acknowledges a message once its file is written. A
// download that breaks off leaves no file and no acknowledgement: the message comes back after
// its visibility timeout.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { ApiClient, ReceivedMessage, StreamedPart } from "../api-client.js";
import type { Context } from "../context.js";
import { entryFailure, PartialFailure, UnreachableError, type EntryError } from "../errors.js";
import { progressBar } from "../terminal/progress.js";
import { saveBody, type SavedBody } from "../transfer/save-body.js";
import { messageHead } from "./show.js";

/** One message of `receive --out/--output-dir --json`: the API's fields, where its body went. */
export type SavedMessage = Omit<ReceivedMessage, "body"> &
  SavedBody & {
    readonly acknowledged?: boolean;
    readonly error?: EntryError;
  };

export interface ReceiveToFiles {
  readonly maxMessages: number;
  readonly visibilityTimeoutSeconds: number;
  readonly waitSeconds: number;
  readonly ack: boolean;
  /** `--out`: the one message's file; `--output-dir`: a file per message, named by its ID. */
  readonly target: { readonly file: string } | { readonly dir: string };
}

/** A received body's download stalls out after this long without a byte. */
const STALL_MS = 30_000;
/** A body at least this large gets a progress bar by bytes (on a terminal). */
const BAR_FROM_BYTES = 4 * 1024 * 1024;
/** Message IDs are safe file names; anything else is refused rather than written somewhere odd. */
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$/;

export async function receiveToFiles(
  ctx: Context,
  api: ApiClient,
  topic: string,
  group: string,
  o: ReceiveToFiles,
): Promise<void> {
  if ("dir" in o.target) await mkdir(ctx.path(o.target.dir), { recursive: true });
  const parts = await api.receiveParts(topic, group, {
    maxMessages: o.maxMessages,
    visibilityTimeoutSeconds: o.visibilityTimeoutSeconds,
    waitSeconds: o.waitSeconds,
    stallMs: STALL_MS,
  });
  const results: SavedMessage[] = [];
  for await (const part of parts) {
    const m = fieldsOf(part.headers);
    const file = fileFor(ctx, o, m.messageId);
    const saved = await save(ctx, part, m, file);
    let result: SavedMessage = { ...m, ...saved };
    if (o.ack) {
      try {
        await api.acknowledge(topic, group, m.receiptHandle);
        result = { ...result, acknowledged: true };
      } catch (err) {
        result = { ...result, acknowledged: false, error: entryFailure(err) };
      }
    }
    results.push(result);
    if (!ctx.out.json) printSaved(ctx, result, o.ack);
  }
  if (ctx.out.json) ctx.out.printJson(results);
  else if (results.length === 0) ctx.out.print("no messages");
  else {
    const n = results.length === 1 ? "1 message" : `${results.length} messages`;
    ctx.out.print(
      o.ack ? `${n} saved, acknowledged` : `${n} saved, leased for ${o.visibilityTimeoutSeconds} s`,
    );
    if (!o.ack) ctx.out.note(`acknowledge one with: vqs ack ${topic} ${group} <receipt-handle>`);
  }
  const failed = results.filter((r) => r.error).length;
  if (failed > 0) {
    throw new PartialFailure(`${failed} of ${results.length} messages were not acknowledged`);
  }
}

/** The message's fields from its part headers (docs/api.md, "Operations"). */
function fieldsOf(h: Headers): Omit<ReceivedMessage, "body"> {
  const dlTopic = h.get("vqs-dead-letter-topic");
  return {
    messageId: h.get("vqs-message-id") ?? "",
    receiptHandle: h.get("vqs-receipt-handle") ?? "",
    deliveryCount: Number(h.get("vqs-delivery-count") ?? 0),
    timestamp: h.get("vqs-timestamp") ?? "",
    expiresAt: h.get("vqs-expires-at") ?? "",
    contentType: h.get("content-type") ?? "application/octet-stream",
    ...(dlTopic
      ? {
          deadLetter: {
            topic: dlTopic,
            consumerGroup: h.get("vqs-dead-letter-consumer-group") ?? "",
            messageId: h.get("vqs-dead-letter-message-id") ?? "",
            deliveryCount: Number(h.get("vqs-dead-letter-delivery-count") ?? 0),
          },
        }
      : {}),
  };
}

function fileFor(ctx: Context, o: ReceiveToFiles, messageId: string): string {
  if ("file" in o.target) return ctx.path(o.target.file);
  if (!SAFE_NAME.test(messageId)) {
    throw new UnreachableError(
      `the message ID ${JSON.stringify(messageId)} is no safe file name: nothing was written`,
      "invalid_response",
    );
  }
  return join(ctx.path(o.target.dir), messageId);
}

/** The part's body into `file`, with a progress bar by bytes when it is large. */
async function save(
  ctx: Context,
  part: StreamedPart,
  m: Omit<ReceivedMessage, "body">,
  file: string,
): Promise<SavedBody> {
  const length = part.headers.get("content-length");
  const size = length !== null && /^[0-9]{1,15}$/.test(length) ? Number(length) : null;
  const bar =
    size !== null && size >= BAR_FROM_BYTES
      ? progressBar(ctx.stderr, ctx.env, ctx.out.paintErr, Date.now, "bytes")
      : null;
  let got = 0;
  const payload = bar
    ? (async function* () {
        bar.update(0, size ?? 0);
        for await (const chunk of part.payload) {
          got += chunk.length;
          bar.update(got, size ?? got);
          yield chunk;
        }
      })()
    : part.payload;
  try {
    return await saveBody(payload, file, size);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const io = (err as NodeJS.ErrnoException).code;
    if (io && io !== "ERR_STREAM_PREMATURE_CLOSE") {
      throw new UnreachableError(`cannot write ${file}: ${io}`, "file_unwritable", { cause: err });
    }
    throw new UnreachableError(
      `the body of ${m.messageId} did not arrive whole (${why}): no file was written, and the ` +
        "message comes back after its visibility timeout",
      "download_failed",
      { cause: err },
    );
  } finally {
    bar?.stop();
  }
}

function printSaved(ctx: Context, r: SavedMessage, acked: boolean): void {
  const out = ctx.out;
  const lines = messageHead(r, r.size, { paint: out.paint, showHandle: !acked });
  lines.push(`  saved to ${r.file}  sha256 ${r.sha256}`);
  if (r.error) {
    lines.push(
      `  ${out.paint("red", "not acknowledged:")} ${r.error.code} (HTTP ${r.error.status}): ${r.error.message}`,
    );
  }
  out.print(lines.join("\n"));
}

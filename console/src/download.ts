// Downloading a message's payload as a file, never rendering it. A payload the peek can carry
// (up to the gateway's inline limit, 1 MiB by default) comes from a peek with payload=full; a
// larger one is streamed from the API: received by ID in a group of the console's own
// (`vqs-console-<random>`, so no application group is leased and no delivery count of one goes
// up), its multipart answer cut down to the part's bytes as they arrive, the count checked
// against the part's Content-Length, and the group deleted again. The bytes go to a Blob (the
// browser keeps a large one on disk) that an <a download> saves.
import type { Api } from "./api.js";
import { ApiError } from "./api.js";
import { base64ToBytes } from "./payload.js";
import type { PeekedMessage } from "./types.js";

/** Payloads up to this size may be in a peek answer; larger ones are streamed by ID. */
export const PEEKABLE_BYTES = 1024 * 1024;

/** The payload as a Blob of its content type. `previous`: the message before it in the list. */
export async function payloadBlob(
  api: Api,
  topic: string,
  m: PeekedMessage,
  previous: string | null,
): Promise<Blob> {
  const type = m.contentType ?? "application/octet-stream";
  if (m.size <= PEEKABLE_BYTES) {
    const page = await api.peek(topic, { after: previous, limit: 1, full: true });
    const found = page.messages.find((x) => x.messageId === m.messageId);
    if (!found) throw new ApiError(404, "message_not_found", "The message is no longer there.");
    // A body kept in the large-body store is never in a peek answer: stream it instead.
    if (found.payload !== undefined) return new Blob([base64ToBytes(found.payload)], { type });
  }
  const group = `vqs-console-${Math.random().toString(36).slice(2, 10)}`;
  try {
    const response = await api.open(
      "POST",
      `/api/v3/topic/${encodeURIComponent(topic)}/consumer/${group}/id/${encodeURIComponent(m.messageId)}`,
      { accept: "multipart/mixed", "vqs-visibility-timeout-seconds": "3600" },
    );
    return await new Response(onePart(response), { headers: { "content-type": type } }).blob();
  } finally {
    await api.deleteGroup(topic, group).catch(() => undefined);
  }
}

/** Saves `blob` as a file named `name` (the browser's download). */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  // The download has taken the URL once the click ran; freed a little later.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A file name for a message's payload: its ID and an extension for common types. */
export function fileName(m: PeekedMessage): string {
  const type = (m.contentType ?? "").split(";")[0]!.trim().toLowerCase();
  const ext =
    type === "application/json" || type.endsWith("+json")
      ? ".json"
      : type.startsWith("text/")
        ? ".txt"
        : ".bin";
  return `${m.messageId}${ext}`;
}

const CRLF2 = new Uint8Array([13, 10, 13, 10]);
/** Part headers larger than this are not the gateway's. */
const MAX_HEAD = 64 * 1024;

/**
 * The bytes of the first part of a multipart answer, as they arrive: the head is read up to its
 * blank line, then exactly Content-Length bytes are passed on. A connection cut inside the body,
 * or fewer bytes than announced, fails the stream: a cut body is never saved as a whole one.
 */
export function onePart(response: Response): ReadableStream<Uint8Array> {
  const reader = response.body!.getReader();
  let head = new Uint8Array(0);
  let left = -1; // body bytes still to pass on; -1 while reading the head
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const r = await reader.read();
        if (r.done) {
          controller.error(
            new Error(
              left < 0 ? "The answer ended before the message." : "The download broke off.",
            ),
          );
          return;
        }
        let chunk = r.value;
        if (left < 0) {
          const joined = new Uint8Array(head.length + chunk.length);
          joined.set(head);
          joined.set(chunk, head.length);
          const end = indexOf(joined, CRLF2);
          if (end < 0) {
            if (joined.length > MAX_HEAD)
              return controller.error(new Error("No message in the answer."));
            head = joined;
            continue;
          }
          const text = new TextDecoder("latin1").decode(joined.subarray(0, end));
          const length = /^content-length:\s*(\d+)\s*$/im.exec(text);
          if (!length) return controller.error(new Error("The message's size is missing."));
          left = Number(length[1]);
          chunk = joined.subarray(end + CRLF2.length);
        }
        const take = chunk.subarray(0, left);
        left -= take.length;
        if (take.length === 0 && left > 0) continue; // only the head so far: read on
        if (take.length > 0) controller.enqueue(take);
        if (left === 0) {
          controller.close();
          void reader.cancel().catch(() => undefined);
        }
        return;
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

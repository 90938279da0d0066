// The minimum download rate (minDownloadBytesPerSecond over
// minDownloadWindowSeconds): a large body is streamed as its reader takes it, in one of
// the gateway's few download slots (VQS_MAX_LARGE_DOWNLOADS), so a reader that stops reading
// without going away would hold its slot, and the read window's chunks, for as long as its
// connection stays open. Counted from the body's first chunk (a wait for a slot is not the
// reader's), each window must move the rate's worth of bytes, or the connection is closed: the
// client gets a cut-off answer, never a short body taken for whole, and the message comes back
// when its lease ends.

import type { MinimumRate } from "../../minimum-rate.js";

/**
 * `body`'s chunks as they come, with `cut` called (once) when a window after the first chunk
 * moved fewer bytes than the rate asks. The watch ends with the body, however it ends.
 */
export async function* atMinimumRate(
  body: AsyncIterable<Uint8Array>,
  rate: MinimumRate,
  cut: (moved: number) => void,
): AsyncGenerator<Uint8Array> {
  const least = (rate.minBytesPerSecond * rate.windowMs) / 1000;
  let moved = 0;
  let timer: NodeJS.Timeout | null = null;
  const check = () => {
    if (moved < least) {
      timer = null;
      cut(moved);
      return;
    }
    moved = 0;
    timer = setTimeout(check, rate.windowMs).unref();
  };
  try {
    for await (const chunk of body) {
      timer ??= setTimeout(check, rate.windowMs).unref();
      // Counted once the reader asks for more: a chunk still in the answer's buffers is not read.
      yield chunk;
      moved += chunk.byteLength;
    }
  } finally {
    if (timer) clearTimeout(timer);
  }
}

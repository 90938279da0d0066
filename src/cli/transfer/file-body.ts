// A file as a request body that is read as the socket takes it (never whole in memory), with
// its size for Content-Length (so the gateway can refuse a file over its limit before reading
// it) and a callback per chunk sent on (progress, and the stall timeout).
import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";

export interface FileBody {
  readonly size: number;
  readonly stream: ReadableStream<Uint8Array>;
}

/** The file's bytes from its start; the stream closes the handle at its end or on cancel. */
export async function fileBody(
  handle: FileHandle,
  onChunk: (bytes: number) => void,
): Promise<FileBody> {
  const { size } = await handle.stat();
  // 256 KiB reads: few system calls for a large file, little memory held per read.
  const source = Readable.toWeb(
    handle.createReadStream({ highWaterMark: 256 * 1024, start: 0 }),
  ) as ReadableStream<Uint8Array>;
  return { size, stream: counted(source, onChunk) };
}

/** `source` passed through unchanged, `onChunk` told the size of each chunk as it is taken. */
export function counted(
  source: ReadableStream<Uint8Array>,
  onChunk: (bytes: number) => void,
): ReadableStream<Uint8Array> {
  return source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        onChunk(chunk.length);
        controller.enqueue(chunk);
      },
    }),
  );
}

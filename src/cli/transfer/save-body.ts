// Writes a received body to a file as it streams in: into `<file>.part` first, renamed to the
// file once every byte arrived (and their count is what the part announced), so a file under its
// final name is always a whole body; a failed download leaves no file behind. The SHA-256 of the
// bytes is computed on the way, for the user to compare with what was published.
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

export interface SavedBody {
  readonly file: string;
  readonly size: number;
  readonly sha256: string;
}

export async function saveBody(
  payload: AsyncIterable<Uint8Array>,
  file: string,
  expectedSize: number | null,
): Promise<SavedBody> {
  const partial = `${file}.part`;
  const hash = createHash("sha256");
  let size = 0;
  const counted = async function* () {
    for await (const chunk of payload) {
      hash.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  };
  try {
    await pipeline(Readable.from(counted()), createWriteStream(partial));
    if (expectedSize !== null && size !== expectedSize) {
      throw new Error(`the body ended after ${size} of ${expectedSize} bytes`);
    }
    await rename(partial, file);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
  return { file, size, sha256: hash.digest("hex") };
}

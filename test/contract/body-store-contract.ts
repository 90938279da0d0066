// One contract for the large-body port (src/queue/bodies.ts), run against MemoryBodyStore
// (memory.test.ts, in the quick lane) and the gateway's JetStream body store on a real
// nats-server (jetstream-bodies.test.ts): bodies read back byte for byte, the limit and a failing
// source leave nothing stored, removal, copies of their own, a removed body never read as good.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/errors.js";
import { BodyCorruptError, type BodyRef, type BodyStore } from "../../src/queue/bodies.js";
import { makeNamespace, type TopicAddress } from "../../src/queue/namespace.js";

export interface BodyStoreUnderTest {
  readonly store: () => BodyStore;
  /** The store's chunk size: bodies of more are several chunks. */
  readonly chunkBytes: number;
  /** Chunks (and anything else) the store keeps for the topic's bodies. */
  storedChunks(topic: TopicAddress): Promise<number>;
}

const write = (store: BodyStore, topic: TopicAddress, pieces: Iterable<Uint8Array>, max = 1e9) =>
  store.write(topic, pieces, { retentionSeconds: 3600, maxBytes: max, declaredLength: null });

async function readAll(store: BodyStore, topic: TopicAddress, ref: BodyRef): Promise<Buffer> {
  const got: Uint8Array[] = [];
  for await (const piece of store.read(topic, ref)) got.push(piece);
  return Buffer.concat(got);
}

/** `body` in pieces of uneven sizes, as a request stream brings it. */
function* pieces(body: Buffer): Generator<Uint8Array> {
  for (let at = 0, n = 1; at < body.length; at += n, n = n * 3 + 7) {
    yield body.subarray(at, Math.min(body.length, at + n));
  }
}

export function bodyStoreContract(name: string, under: BodyStoreUnderTest): void {
  // A namespace of its own per test: the store is shared by the file's tests.
  const topic = (t = "bodies"): TopicAddress => ({
    namespace: makeNamespace("body-team", randomBytes(4).toString("hex"), "production", null),
    topic: t,
  });

  describe(`body store contract: ${name}`, () => {
    it("reads back every body byte for byte, empty and over several chunks", async () => {
      const t = topic();
      const sizes = [0, 1, 1000, under.chunkBytes, 2 * under.chunkBytes + 17];
      for (const size of sizes) {
        const body = randomBytes(size);
        const ref = await write(under.store(), t, pieces(body));
        expect(ref.length).toBe(size);
        expect(ref.id).toMatch(/^[0-9a-f]{32}$/);
        expect((await readAll(under.store(), t, ref)).equals(body)).toBe(true);
        await under.store().commit(t, ref, 3600);
        expect((await readAll(under.store(), t, ref)).equals(body)).toBe(true);
      }
    });

    it("refuses a body past the limit with payload_too_large, leaving nothing stored", async () => {
      const t = topic();
      // Two chunks are stored before the limit is passed: they must go too.
      const body = randomBytes(3 * under.chunkBytes);
      const twelfths = (b: Buffer) =>
        Array.from({ length: 12 }, (_, i) =>
          b.subarray((i * b.length) / 12, ((i + 1) * b.length) / 12),
        );
      const limit = 2 * under.chunkBytes + 1;
      const err = await write(under.store(), t, twelfths(body), limit).catch((e: unknown) => e);
      expect(isAppError(err) && err.code).toBe("payload_too_large");
      expect(await under.storedChunks(t)).toBe(0);
      // Exactly the limit is fine.
      const ref = await write(under.store(), t, twelfths(body), body.length);
      expect((await readAll(under.store(), t, ref)).equals(body)).toBe(true);
    });

    it("leaves nothing stored when the source fails part-way", async () => {
      const t = topic();
      async function* failing(): AsyncGenerator<Uint8Array> {
        yield randomBytes(under.chunkBytes);
        yield await Promise.resolve(randomBytes(under.chunkBytes));
        throw new Error("client went away");
      }
      await expect(
        under.store().write(t, failing(), {
          retentionSeconds: 3600,
          maxBytes: 1e9,
          declaredLength: null,
        }),
      ).rejects.toThrow();
      expect(await under.storedChunks(t)).toBe(0);
    });

    it("gives a body's first bytes from its first chunk, and nothing of a removed body", async () => {
      const t = topic();
      const body = randomBytes(2 * under.chunkBytes + 3);
      const ref = await write(under.store(), t, pieces(body));
      expect(Buffer.from(await under.store().head(t, ref, 100)).equals(body.subarray(0, 100))).toBe(
        true,
      );
      // Never more than the first chunk, however many bytes are asked for.
      const most = await under.store().head(t, ref, body.length);
      expect(Buffer.from(most).equals(body.subarray(0, under.chunkBytes))).toBe(true);
      const tiny = await write(under.store(), t, [Buffer.from("abc")]);
      expect(Buffer.from(await under.store().head(t, tiny, 100)).toString()).toBe("abc");
      await under.store().remove(t, ref);
      expect((await under.store().head(t, ref, 100)).length).toBe(0);
    });

    it("removes a body (twice is fine); a removed body reads as corrupt, never as good", async () => {
      const t = topic();
      const ref = await write(under.store(), t, pieces(randomBytes(under.chunkBytes + 5)));
      await under.store().remove(t, ref);
      await under.store().remove(t, ref);
      expect(await under.storedChunks(t)).toBe(0);
      await expect(readAll(under.store(), t, ref)).rejects.toBeInstanceOf(BodyCorruptError);
    });

    it("copies a body to another topic, independent of the original", async () => {
      const from = topic("orders");
      const to: TopicAddress = { ...from, topic: "orders-dead" };
      const body = randomBytes(under.chunkBytes + 33);
      const ref = await write(under.store(), from, pieces(body));
      const copy = await under.store().copy(from, ref, to, 60);
      expect(copy.id).not.toBe(ref.id);
      expect({ length: copy.length, sha256: copy.sha256 }).toEqual({
        length: ref.length,
        sha256: ref.sha256,
      });
      await under.store().remove(from, ref);
      expect(await under.storedChunks(from)).toBe(0);
      expect((await readAll(under.store(), to, copy)).equals(body)).toBe(true);
      // The copy is the other topic's: it is not found under the original's topic.
      await expect(readAll(under.store(), from, copy)).rejects.toBeInstanceOf(BodyCorruptError);
    });

    it("refuses to read a body whose length or SHA-256 is not the one recorded", async () => {
      const t = topic();
      const body = randomBytes(under.chunkBytes + 9);
      const ref = await write(under.store(), t, pieces(body));
      const got: Uint8Array[] = [];
      const wrongHash = { ...ref, sha256: "0".repeat(64) };
      const err = await (async () => {
        for await (const piece of under.store().read(t, wrongHash)) got.push(piece);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BodyCorruptError);
      // Never the whole body: the last bytes are held back until the check.
      expect(Buffer.concat(got).length).toBeLessThan(body.length);
      await expect(
        readAll(under.store(), t, { ...ref, length: ref.length - 1 }),
      ).rejects.toBeInstanceOf(BodyCorruptError);
    });
  });
}

// A large body's publish refused for its token, its topic name or a header is answered before its
// body is read: the client declares 100 MB (or sends chunked), writes a little of it and gets the
// 4xx while the rest was never sent, and the connection ends (a lingering close) instead of the
// gateway reading the rest to keep it. Nothing of it is stored. Real nats-server.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { connect as connectTcp } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY_STREAM } from "../../../src/nats/core/naming.js";
import { useGateways } from "../../helpers/fixture.js";
import { uniqueName } from "../../helpers/http.js";

const MB = 1_000_000;
/** What the client writes of its body before it waits for the answer. */
const SENT = 64 * 1024;

const fx = useGateways(1); // the default limit: 100 MB
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: fx.nats.url });
});

afterAll(async () => {
  await nc?.close();
});

/**
 * A raw publish that declares a 100 MB body (or sends it chunked), writes only SENT bytes of it
 * and waits for the answer's status line and error code; the rest is never sent.
 */
async function refusedBeforeBody(o: {
  topic: string;
  token: string;
  headers?: Record<string, string>;
  chunked?: boolean;
}): Promise<{ status: number; code: string | undefined; closed: boolean }> {
  const socket = connectTcp({
    port: Number(new URL(fx.gateways[0]!.url).port),
    host: "127.0.0.1",
    allowHalfOpen: true,
  });
  let ended = false;
  socket.on("end", () => (ended = true));
  await new Promise((resolve) => socket.once("connect", resolve));
  let text = "";
  socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
  socket.on("error", () => undefined);
  const extra = Object.entries(o.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  const length = o.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${100 * MB}`;
  socket.write(
    `POST /api/v3/topic/${o.topic} HTTP/1.1\r\nHost: x\r\n` +
      `Authorization: Bearer ${o.token}\r\n${length}\r\n${extra}\r\n`,
  );
  const piece = Buffer.alloc(SENT, 7);
  socket.write(
    o.chunked
      ? Buffer.concat([Buffer.from(`${SENT.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
      : piece,
  );
  // The answer comes with the body unsent but for SENT bytes (an answer after the whole body
  // would never come: the test never sends it).
  await expect.poll(() => /\r\n\r\n[\s\S]*\}/.test(text), { timeout: 15_000 }).toBe(true);
  // And the gateway ends the connection (a lingering close) rather than read the rest of the
  // declared body to keep it.
  await expect.poll(() => ended, { timeout: 10_000 }).toBe(true);
  socket.destroy();
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
  const code = /"code":"([a-z_]+)"/.exec(text)?.[1];
  return { status, code, closed: /\r\nconnection: close\r\n/i.test(text) };
}

describe("a large publish refused before its body is read", () => {
  it("answers a bad token, a bad topic name and a bad Vqs-* header with its 4xx, unread", async () => {
    const token = await fx.issuer.token();
    const topic = uniqueName("early");
    const cases = [
      { name: "bad token", token: "not-a-token", topic, want: [401, "invalid_token"] },
      { name: "bad topic", token, topic: "bad%20name", want: [400, "invalid_topic_name"] },
      {
        name: "bad header",
        token,
        topic,
        headers: { "Vqs-Delay-Seconds": "abc" },
        want: [400, "invalid_delay_seconds"],
      },
    ] as const;
    for (const c of cases) {
      for (const chunked of [false, true]) {
        const got = await refusedBeforeBody({ ...c, chunked });
        const what = `${c.name}${chunked ? " (chunked)" : ""}`;
        expect([got.status, got.code], what).toEqual(c.want);
        expect(got.closed, what).toBe(true);
      }
    }
    // Nothing of them is in the body store (it was never even made).
    const jsm = await jetstreamManager(nc);
    const stored = await jsm.streams.info(BODY_STREAM).then(
      (i) => i.state.messages,
      () => 0,
    );
    expect(stored).toBe(0);
  });
});

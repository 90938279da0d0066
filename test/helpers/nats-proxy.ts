// A TCP proxy between NATS clients and a real nats-server that understands enough of the NATS
// protocol to lose one chosen reply: the client's request reaches the server (and takes effect)
// but its answer never comes back, as when a connection breaks at the wrong moment. Everything
// else passes through unchanged. It can also lose one chosen request before it reaches the server.
import { createServer, connect, type Server, type Socket } from "node:net";

/** Picks a request (a PUB or HPUB) whose reply is to be lost. */
export type RequestMatcher = (subject: string, headers: string) => boolean;

export interface NatsProxy {
  /** What clients connect to instead of the server. */
  readonly url: string;
  /** Loses the reply to the next request that `match` picks; resolves once one was lost. */
  loseReplyTo(match: RequestMatcher): Promise<void>;
  /**
   * Loses the next request `match` picks on its way to the server (it never takes effect, as
   * when its sender dies just before it); resolves once one was lost.
   */
  loseRequest(match: RequestMatcher): Promise<void>;
  close(): Promise<void>;
}

const CRLF = Buffer.from("\r\n");

export async function startNatsProxy(upstreamPort: number): Promise<NatsProxy> {
  const rules: { match: RequestMatcher; done: () => void }[] = [];
  const requestRules: { match: RequestMatcher; done: () => void }[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPort, "127.0.0.1");
    sockets.add(client).add(upstream);
    /** Reply subjects whose next message is dropped. */
    const lost = new Set<string>();
    const fromClient = new FrameReader((line, body, raw) => {
      // PUB <subject> [reply] <size> | HPUB <subject> [reply] <header size> <total size>
      const t = line.split(/\s+/);
      const op = t[0]!.toUpperCase();
      const withReply = (op === "PUB" && t.length === 4) || (op === "HPUB" && t.length === 5);
      if (withReply) {
        const headers = op === "HPUB" ? body.subarray(0, Number(t[3])).toString() : "";
        const dropped = requestRules.findIndex((r) => r.match(t[1]!, headers));
        if (dropped >= 0) {
          requestRules.splice(dropped, 1)[0]!.done();
          return; // never forwarded
        }
        const rule = rules.findIndex((r) => r.match(t[1]!, headers));
        if (rule >= 0) {
          lost.add(t[2]!);
          rules.splice(rule, 1)[0]!.done();
        }
      }
      upstream.write(raw);
    });
    const fromServer = new FrameReader((line, _body, raw) => {
      const m = /^H?MSG (\S+) /i.exec(line);
      if (m && lost.delete(m[1]!)) return;
      client.write(raw);
    });
    client.on("data", (chunk: Buffer) => fromClient.push(chunk));
    upstream.on("data", (chunk: Buffer) => fromServer.push(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    url: `nats://127.0.0.1:${port}`,
    loseReplyTo: (match) => new Promise<void>((done) => rules.push({ match, done })),
    loseRequest: (match) => new Promise<void>((done) => requestRules.push({ match, done })),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * Splits a NATS protocol byte stream into frames: a control line, plus for (H)PUB and (H)MSG the
 * payload that follows it. Hands each frame over with its raw bytes.
 */
class FrameReader {
  #buf: Buffer = Buffer.alloc(0);
  readonly #onFrame: (line: string, body: Buffer, raw: Buffer) => void;

  constructor(onFrame: (line: string, body: Buffer, raw: Buffer) => void) {
    this.#onFrame = onFrame;
  }

  push(chunk: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    for (;;) {
      const eol = this.#buf.indexOf(CRLF);
      if (eol < 0) return;
      const line = this.#buf.subarray(0, eol).toString();
      const size = payloadSize(line);
      const end = size === null ? eol + 2 : eol + 2 + size + 2;
      if (this.#buf.length < end) return;
      const raw = this.#buf.subarray(0, end);
      this.#buf = this.#buf.subarray(end);
      this.#onFrame(line, size === null ? Buffer.alloc(0) : raw.subarray(eol + 2, end - 2), raw);
    }
  }
}

/** The payload size a control line announces (its last number), or null for a bare line. */
function payloadSize(line: string): number | null {
  if (!/^(H?PUB|H?MSG) /i.test(line)) return null;
  return Number(line.slice(line.lastIndexOf(" ") + 1));
}

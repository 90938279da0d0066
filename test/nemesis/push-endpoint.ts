// The pushed group's endpoint: a plain webhook (the group has `autoAck`, so a 2xx acknowledges)
// listening on the lab bridge's address, where every gateway's namespace reaches it and no
// partition cuts it off (like the token issuer). Every push it receives goes into the history as
// an operation: invoked when it arrived, completed with the status it answered and the pushed
// message (ID, delivery count, receipt handle, body) as its one delivery. It answers 500 to a
// small deterministic share of first attempts (by message ID), so retries are exercised too.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { HistoryWriter } from "./check/history.js";
import { labelOf, sha256 } from "./payload.js";

export interface PushEndpoint {
  readonly url: string;
  /** Bodies pushed and answered 2xx at least once. */
  readonly done: ReadonlySet<string>;
  readonly counts: { received: number; failed: number };
  close(): Promise<void>;
}

export interface PushEndpointOptions {
  readonly host: string;
  readonly group: string;
  /** Gateway addresses, by index (to name the gateway that pushed). */
  readonly gateways: readonly string[];
  /** One first attempt in this many is answered 500 (0: never). */
  readonly failOneIn: number;
}

/** A stable hash of a message ID (FNV-1a), so the same messages fail in every run. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export async function startPushEndpoint(
  history: HistoryWriter,
  o: PushEndpointOptions,
): Promise<PushEndpoint> {
  const done = new Set<string>();
  const counts = { received: 0, failed: 0 };
  const onRequest = (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    const h = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(", ") : (v ?? "");
    };
    const remote = (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const id = history.nextId();
    history.write({
      type: "invoke",
      id,
      proc: "push",
      gw: o.gateways.indexOf(remote),
      f: "push",
      group: h("ce-vqsconsumergroup") || o.group,
    });
    counts.received++;
    const messageId = h("ce-vqsmessageid");
    const count = Number(h("ce-vqsdeliverycount"));
    const fail = o.failOneIn > 0 && count === 1 && hash(messageId) % o.failOneIn === 0;
    const status = fail ? 500 : 200;
    res.writeHead(status, { "content-type": "application/json" }).end("{}");
    const text = labelOf(body);
    if (fail) counts.failed++;
    else done.add(text);
    history.write({
      type: "complete",
      id,
      status,
      messages: [
        {
          id: messageId,
          handle: h("ce-vqsreceipthandle"),
          count,
          body: text,
          sha256: sha256(body),
          size: body.length,
        },
      ],
      ...(h("authorization").startsWith("Bearer ") ? {} : { error: "no bearer token" }),
    });
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => onRequest(req, Buffer.concat(chunks), res));
  });
  await new Promise<void>((r) => server.listen(0, o.host, r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${o.host}:${port}/push/${o.group}`,
    done,
    counts,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

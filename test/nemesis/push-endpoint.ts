// The pushed group's endpoint: a plain webhook (the group has `autoAck`, so a 2xx acknowledges)
// listening on the lab bridge's address, where every gateway's namespace reaches it and no
// partition cuts it off (like the token issuer). Every push it receives goes into the history as
// an operation: invoked when it arrived, completed with the status it answered and the pushed
// message (ID, delivery count, receipt handle, body) as its one delivery. It answers 500 to a
// small deterministic share of first attempts (by message ID), so retries are exercised too. A
// large body comes without body and handle: the endpoint receives it by ID first, as the real
// client's handleCallback does, and answers 500 when that fails.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { HistoryWriter } from "./check/history.js";
import { parseMultipartStream } from "mixpart";
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
  /**
   * Large bodies are pushed without body and handle (the hosted service's large-body mode): the
   * endpoint then receives the message by ID from the gateway that pushed it, as
   * `handleCallback` does, before it answers.
   */
  readonly byId: {
    /** Gateway base URLs, by index. */
    readonly urls: readonly string[];
    readonly topic: string;
    readonly token: () => string;
  };
}

/** mixpart counts the next socket read into its header limit: larger than any read. */
const PARSER = { maxHeaderSize: 1024 * 1024 };

/** The message received by ID (multipart/mixed), or null when the gateway said no. */
async function receiveById(
  o: PushEndpointOptions,
  gw: number,
  group: string,
  messageId: string,
): Promise<{ bytes: Buffer; handle: string; count: number } | null> {
  const base = o.byId.urls[gw >= 0 ? gw : 0]!;
  const res = await fetch(
    `${base}/api/v3/topic/${o.byId.topic}/consumer/${group}/id/${encodeURIComponent(messageId)}`,
    {
      method: "POST",
      headers: {
        authorization: `Bearer ${o.byId.token()}`,
        accept: "multipart/mixed",
        "vqs-visibility-timeout-seconds": "30",
      },
      signal: AbortSignal.timeout(20_000),
    },
  );
  if (res.status !== 200) {
    await res.arrayBuffer();
    return null;
  }
  for await (const part of parseMultipartStream(res, PARSER)) {
    return {
      bytes: Buffer.from(await new Response(part.payload).arrayBuffer()),
      handle: part.headers.get("vqs-receipt-handle") ?? "",
      count: Number(part.headers.get("vqs-delivery-count")),
    };
  }
  return null;
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
  const onRequest = async (req: IncomingMessage, pushed: Buffer, res: ServerResponse) => {
    const h = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(", ") : (v ?? "");
    };
    const remote = (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const gw = o.gateways.indexOf(remote);
    const id = history.nextId();
    const group = h("ce-vqsconsumergroup") || o.group;
    history.write({ type: "invoke", id, proc: "push", gw, f: "push", group });
    counts.received++;
    const messageId = h("ce-vqsmessageid");
    let count = Number(h("ce-vqsdeliverycount"));
    let handle = h("ce-vqsreceipthandle");
    let body = pushed;
    let error: string | undefined;
    let fail = o.failOneIn > 0 && count === 1 && hash(messageId) % o.failOneIn === 0;
    if (!fail && handle === "") {
      // Pushed by ID (a large body): the body comes from a receive by ID.
      const got = await receiveById(o, gw, group, messageId).catch((e: unknown) => {
        error = `receive by ID: ${String(e)}`;
        return null;
      });
      if (got) ({ bytes: body, handle, count } = got);
      else fail = true;
    }
    const status = fail ? 500 : 200;
    res.writeHead(status, { "content-type": "application/json" }).end("{}");
    const text = labelOf(body);
    if (fail) counts.failed++;
    else done.add(text);
    history.write({
      type: "complete",
      id,
      status,
      // A failed receive by ID delivered nothing.
      messages:
        fail && handle === ""
          ? []
          : [{ id: messageId, handle, count, body: text, sha256: sha256(body), size: body.length }],
      ...(error
        ? { error }
        : h("authorization").startsWith("Bearer ")
          ? {}
          : { error: "no bearer token" }),
    });
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => void onRequest(req, Buffer.concat(chunks), res));
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

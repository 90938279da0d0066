// An app that consumes by push, as users write one: a plain node:http server whose routes are
// the real `@vercel/queue` client's handleCallback (Fetch-style, at /fetch/<name>) and
// handleNodeCallback (Node-style, with the body pre-parsed like a framework does, at
// /node/<name>), and plain webhooks (/hook/<name>) that answer a chosen status. It records every
// request (headers, the time, how many were in flight) for the tests to look at.
import { BufferTransport, QueueClient, StreamTransport, type MessageMetadata } from "@vercel/queue";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";
import type { Fixture } from "./fixture.js";

export interface PushRecord {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly atMs: number;
}

export type Handler = (payload: unknown, meta: MessageMetadata) => Promise<void> | void;

export interface CallbackRoute {
  readonly handler: Handler;
  readonly options?: Parameters<QueueClient["handleCallback"]>[1];
  /**
   * "buffer": the client's BufferTransport (payloads as Buffers); "stream": its StreamTransport
   * (payloads as ReadableStreams, never buffered); default JSON.
   */
  readonly transport?: "json" | "buffer" | "stream";
  /** Wraps the Fetch-style handler (a fetchRoute's), as an app's verifier does. */
  readonly wrap?: (
    handle: (request: Request) => Promise<Response>,
  ) => (request: Request) => Promise<Response>;
}

export interface PushApp {
  readonly url: string;
  readonly requests: PushRecord[];
  /** Requests in flight now, and the most there ever were at once, per route name. */
  inFlight(name: string): { now: number; max: number };
  /** A handleCallback (Fetch-style) route. */
  fetchRoute(name: string, route: CallbackRoute): string;
  /** A handleNodeCallback (Node-style) route. */
  nodeRoute(name: string, route: CallbackRoute): string;
  /** A plain webhook answering `status` after `delayMs` (either may be a function: per request). */
  hookRoute(
    name: string,
    /** A function gets the pushed body as text. */
    status: number | ((body: string) => number),
    delayMs?: number | (() => number),
  ): string;
  close(): Promise<void>;
}

/** `gatewayUrl`: where the client acknowledges (a function: read at each call). */
export async function startPushApp(
  gatewayUrl: string | (() => string),
  token: string,
): Promise<PushApp> {
  const requests: PushRecord[] = [];
  const routes = new Map<
    string,
    (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>
  >();
  const flight = new Map<string, { now: number; max: number }>();
  const client = (transport: CallbackRoute["transport"]) =>
    new QueueClient({
      region: "iad1",
      token,
      deploymentId: null,
      resolveBaseUrl: () => new URL(typeof gatewayUrl === "string" ? gatewayUrl : gatewayUrl()),
      ...(transport === "buffer" ? { transport: new BufferTransport() } : {}),
      ...(transport === "stream" ? { transport: new StreamTransport() } : {}),
    });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? "/";
      const name = path.split("/")[2] ?? "";
      const f = flight.get(name) ?? { now: 0, max: 0 };
      flight.set(name, f);
      f.now++;
      f.max = Math.max(f.max, f.now);
      requests.push({ path, headers: flat(req.headers), body, atMs: Date.now() });
      const route = routes.get(path);
      const done = () => void (f.now -= 1);
      res.on("close", done);
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      route(req, res, body).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(599).end(String(err));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    inFlight: (name) => flight.get(name) ?? { now: 0, max: 0 },
    fetchRoute(name, route) {
      const callback = client(route.transport).handleCallback(route.handler, route.options);
      const handle = route.wrap ? route.wrap(callback) : callback;
      routes.set(`/fetch/${name}`, async (req, res, body) => {
        const request = new Request(`${url}${req.url}`, {
          method: req.method ?? "POST",
          headers: flat(req.headers),
          ...(body.length ? { body } : {}),
        });
        const response = await handle(request);
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end(Buffer.from(await response.arrayBuffer()));
      });
      return `${url}/fetch/${name}`;
    },
    nodeRoute(name, route) {
      const handle = client(route.transport).handleNodeCallback(route.handler, route.options);
      routes.set(`/node/${name}`, async (req, res, body) => {
        // As a framework's body parser leaves it: JSON parsed, anything else as bytes.
        const json = /json/.test(req.headers["content-type"] ?? "");
        const parsed =
          body.length === 0 ? undefined : json ? (JSON.parse(body.toString()) as unknown) : body;
        const nodeReq = Object.assign(req, { body: parsed });
        const nodeRes = Object.assign(res, {
          status(code: number) {
            res.statusCode = code;
            return nodeRes;
          },
          json(value: unknown) {
            res.setHeader("content-type", "application/json");
            res.end(JSON.stringify(value));
            return nodeRes;
          },
        });
        await handle(nodeReq, nodeRes);
      });
      return `${url}/node/${name}`;
    },
    hookRoute(name, status, delay = 0) {
      routes.set(`/hook/${name}`, async (_req, res, body) => {
        const delayMs = typeof delay === "function" ? delay() : delay;
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        res.writeHead(typeof status === "function" ? status(body.toString()) : status).end("{}");
      });
      return `${url}/hook/${name}`;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function flat(h: IncomingMessage["headers"] | Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
  }
  return out;
}

/**
 * A push app for a test file's fixture: started before its tests with a token of the fixture's
 * issuer (its client talks to the first gateway), closed after them. Read `app` and `token`
 * inside tests.
 */
export function usePushApp(fx: Fixture): { readonly app: PushApp; readonly token: string } {
  const ctx = {} as { app: PushApp; token: string };
  beforeAll(async () => {
    ctx.token = await fx.issuer.token();
    ctx.app = await startPushApp(fx.gateways[0]!.url, ctx.token);
  });
  afterAll(async () => {
    await (ctx.app as PushApp | undefined)?.close();
  });
  return ctx;
}

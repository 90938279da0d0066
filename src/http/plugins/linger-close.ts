// A refusal answered before its request body was read (413, 503 busy, ...) is followed by a
// lingering close: Node would close the socket as soon as the answer is written, with the
// client's body still arriving, and the kernel then resets the connection; a client still
// writing sees EPIPE or ECONNRESET and often never reads the answer. Instead the gateway ends its
// side (the answer is all) and keeps the socket a moment longer, while Node's server reads and
// discards what the client still sends, so the client reads the answer rather than a reset; the
// socket is closed once the client has sent `maxBytes` more or `maxMs` have passed (nginx's
// lingering close, the same idea).
import type { FastifyReply, FastifyRequest } from "fastify";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

export interface LingerBounds {
  /** Bytes discarded at most after the answer. */
  readonly maxBytes: number;
  /** Time the connection lingers at most after the answer. */
  readonly maxMs: number;
}

export const LINGER: LingerBounds = { maxBytes: 8 * 1024 * 1024, maxMs: 5_000 };
/** How often the bytes discarded are looked at (a `data` listener would take the socket from
 * Node's parser, which reads it natively). */
const CHECK_MS = 50;

/** The request each socket's lingering close is for: the last one that asked, one per socket. */
const lingering = new WeakMap<Socket, { request: IncomingMessage; bounds: LingerBounds }>();

/**
 * Makes the close that Node does after a `Connection: close` answer to `request` a lingering one.
 * Node calls `destroySoon` on the socket once such an answer is written; nothing else does here.
 * A keep-alive socket is wrapped once, for the last request that asked (wrapping it per request
 * would keep every earlier request alive in a chain of wrappers as long as the connection).
 */
export function lingerOnClose(request: IncomingMessage, bounds: LingerBounds = LINGER): void {
  const socket = request.socket as Socket | null;
  // No socket of Node's (an injected request): nothing to close.
  if (typeof socket?.destroySoon !== "function") return;
  const wrapped = lingering.has(socket);
  lingering.set(socket, { request, bounds });
  if (wrapped) return;
  const plain = socket.destroySoon.bind(socket);
  socket.destroySoon = function lingeringClose(this: Socket) {
    const last = lingering.get(this);
    // The body was read whole (or a later request on the connection): nothing to wait for.
    if (!last || last.request.complete) return plain();
    this.end(); // the answer is all this side sends
    const until = this.bytesRead + last.bounds.maxBytes;
    const deadline = Date.now() + last.bounds.maxMs;
    const check = setInterval(() => {
      if (this.bytesRead < until && Date.now() < deadline) return;
      clearInterval(check);
      if (!this.destroyed) this.destroy();
    }, CHECK_MS);
    check.unref();
    this.once("close", () => clearInterval(check));
  };
}

/**
 * A refusal while the body may be unread ends the connection: the rest of the body is not read
 * either, but discarded for a moment, so the client reads the answer rather than a reset. (Set
 * on a refusal, not before every body and taken off after: that cost every publish a header.)
 */
export function refuseUnread(request: FastifyRequest, reply: FastifyReply): void {
  reply.header("connection", "close");
  lingerOnClose(request.raw);
}

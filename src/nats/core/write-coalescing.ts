// One socket write per event-loop turn instead of one per NATS operation. nats.js flushes its
// outbound buffer in a microtask after the first command, and a gateway runs each HTTP request in
// its own I/O callback, so every publish, pull and ack became its own `write` syscall: 18 % of
// the gateway's CPU in the benchmark's profile (docs/performance.md). Corking the connection's
// socket at the first write of a turn and uncorking it in that turn's check phase (setImmediate)
// sends what all requests of the turn wrote as one `writev`, adding no measurable latency.
//
// nats.js does not expose its socket: this reaches into the transport of the pinned version
// (@nats-io/transport-node 3.4.0) and does nothing if the shape differs.
import type { NatsConnection } from "@nats-io/transport-node";
import type { Socket } from "node:net";

const patched = new WeakSet<Socket>();

export function coalesceWrites(nc: NatsConnection): void {
  apply(nc);
  void (async () => {
    for await (const s of nc.status()) if (s.type === "reconnect") apply(nc);
  })();
}

function apply(nc: NatsConnection): void {
  const socket = (nc as unknown as { protocol?: { transport?: { socket?: unknown } } }).protocol
    ?.transport?.socket;
  if (!isSocket(socket) || patched.has(socket)) return;
  patched.add(socket);
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  socket.write = (...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(() => {
        corked = false;
        socket.uncork();
      });
    }
    return write(...args);
  };
}

function isSocket(x: unknown): x is Socket {
  return (
    typeof x === "object" &&
    x !== null &&
    typeof (x as Socket).write === "function" &&
    typeof (x as Socket).cork === "function" &&
    typeof (x as Socket).uncork === "function"
  );
}

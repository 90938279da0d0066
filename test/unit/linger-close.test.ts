// The lingering close after a refusal: a keep-alive socket is wrapped once, whatever the number of
// requests on it, and an injected request (no socket of Node's) is left alone.
import type { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { lingerOnClose } from "../../src/http/plugins/linger-close.js";

const requestOn = (socket: unknown) => ({ socket, complete: true }) as unknown as IncomingMessage;
/** The socket's `destroySoon` as a value, to compare (never called). */
const closeOf = (socket: Socket): unknown =>
  (socket as unknown as Record<string, unknown>).destroySoon;

describe("lingerOnClose", () => {
  it("wraps a keep-alive socket's close once, not once per request", () => {
    const socket = new Socket();
    const original = socket.destroySoon.bind(socket);
    lingerOnClose(requestOn(socket));
    const wrapped = closeOf(socket);
    expect(wrapped).not.toBe(original);
    for (let i = 0; i < 1000; i++) lingerOnClose(requestOn(socket));
    expect(closeOf(socket)).toBe(wrapped);
    socket.destroy();
  });

  it("leaves a request without a Node socket alone (fastify's inject)", () => {
    expect(() => lingerOnClose(requestOn({}))).not.toThrow();
    expect(() => lingerOnClose(requestOn(null))).not.toThrow();
  });
});

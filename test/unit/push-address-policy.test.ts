// Where a push may connect: the special-use ranges refused unless the operator allows them
// (IPv4, IPv6 and IPv4 inside IPv6), and the PushClient against a real node:http server with a
// resolver of the test's own: a name is resolved once per connection, every address it answers
// is checked, and the socket goes to the address that was checked (a rebinding name that
// answers a public address first and loopback later never reaches loopback).
import type { LookupAddress } from "node:dns";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushAddressPolicy, type PushResolver } from "../../src/outbound/push-address-policy.js";
import { PushClient } from "../../src/outbound/push-client.js";

describe("PushAddressPolicy", () => {
  const none = new PushAddressPolicy([]);

  it("refuses private, loopback, link-local and other special-use addresses", () => {
    for (const a of [
      "127.0.0.1",
      "127.255.0.9",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254", // cloud metadata
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd12:3456::1",
      "fc00::1",
      "ff02::1",
      "::ffff:127.0.0.1", // IPv4 inside IPv6, either way it is written
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "0:0:0:0:0:ffff:10.0.0.1",
      "64:ff9b::a00:1", // NAT64
      "2002:a00:1::1", // 6to4
      "not an address",
    ]) {
      expect(none.allows(a), a).toBe(false);
    }
  });

  it("allows public addresses", () => {
    for (const a of [
      "1.1.1.1",
      "8.8.8.8",
      "172.32.0.1",
      "192.0.2.1",
      "2606:4700:4700::1111",
      "::ffff:8.8.8.8",
    ]) {
      expect(none.allows(a), a).toBe(true);
    }
  });

  it("allows exactly the ranges the operator names", () => {
    const p = new PushAddressPolicy(["10.20.0.0/16", "::1/128"]);
    expect(p.allows("10.20.3.4")).toBe(true);
    expect(p.allows("::ffff:10.20.3.4")).toBe(true);
    expect(p.allows("10.21.0.1")).toBe(false);
    expect(p.allows("::1")).toBe(true);
    expect(p.allows("127.0.0.1")).toBe(false);
    expect(p.allows("8.8.8.8")).toBe(true);
  });
});

describe("PushClient's lookup", () => {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** A resolver answering `answers[i]` to its i-th question (the last one after that). */
  function resolver(...answers: string[][]): { resolve: PushResolver; calls: () => number } {
    let calls = 0;
    const resolve: PushResolver = (_host, _family, cb) => {
      const a = answers[Math.min(calls++, answers.length - 1)]!;
      const addresses: LookupAddress[] = a.map((address) => ({
        address,
        family: address.includes(":") ? 6 : 4,
      }));
      setImmediate(() => cb(null, addresses));
    };
    return { resolve, calls: () => calls };
  }

  async function postVia(
    policy: PushAddressPolicy,
    r: ReturnType<typeof resolver>,
    path: string,
    timeoutMs = 1500,
  ) {
    const client = new PushClient({ policy, resolve: r.resolve });
    try {
      return await client.post(
        `http://push.example.test:${port}${path}`,
        {},
        Buffer.from("x"),
        timeoutMs,
      );
    } finally {
      await client.close();
    }
  }

  it("connects to the address it checked: loopback when allowed", async () => {
    const r = resolver(["127.0.0.1"]);
    hits.length = 0;
    const out = await postVia(new PushAddressPolicy(["127.0.0.0/8"]), r, "/allowed");
    expect(out).toEqual({ outcome: "success", status: 200 });
    expect(hits).toEqual(["/allowed"]);
    expect(r.calls()).toBe(1);
  });

  it("refuses a name that resolves to loopback, sending nothing", async () => {
    const r = resolver(["127.0.0.1"]);
    hits.length = 0;
    expect(await postVia(new PushAddressPolicy([]), r, "/refused")).toEqual({
      outcome: "blocked",
      status: null,
    });
    expect(hits).toEqual([]);
  });

  it("refuses a name one of whose addresses is private", async () => {
    const r = resolver(["192.0.2.1", "127.0.0.1"]);
    hits.length = 0;
    expect(await postVia(new PushAddressPolicy([]), r, "/mixed")).toEqual({
      outcome: "blocked",
      status: null,
    });
    expect(hits).toEqual([]);
  });

  it("never connects to a second answer: a rebinding name stays on its checked address", async () => {
    // Public (TEST-NET-1, routed nowhere) when checked, loopback on any later question.
    const r = resolver(["192.0.2.1"], ["127.0.0.1"]);
    hits.length = 0;
    const out = await postVia(new PushAddressPolicy([]), r, "/rebound", 500);
    expect(out.outcome).not.toBe("success");
    expect(hits).toEqual([]);
    expect(r.calls()).toBe(1);
  });
});

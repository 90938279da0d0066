// Gateway faults, with real gateway processes (src/main.ts) killed by SIGKILL:
// - killed mid-publish: clients that retry through another gateway with the same idempotency
//   key get exactly one delivery per key;
// - killed while its consumers hold leases: the leases run out and the messages are redelivered
//   through the other gateway;
// - killed after publishing delayed messages, with NATS restarted too: the timers live in
//   JetStream, so another gateway delivers every message when due, once, with deliveryCount 1.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  killGatewayProcesses,
  spawnGateway as spawnOn,
} from "../helpers/processes/gateway-process.js";
import { api, parts, uniqueName } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { startTestNats, type TestNats } from "../helpers/processes/nats.js";
import { startNatsServer, type NatsServerProcess } from "../../src/dev/nats-server-process.js";
import { eventually } from "../helpers/wait.js";

let nats: TestNats;
let restarted: NatsServerProcess | null = null;
let issuer: TestIssuer;

const spawnGateway = () => spawnOn(restarted?.url ?? nats.url, issuer);

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
});

afterAll(async () => {
  killGatewayProcesses();
  await restarted?.stop();
  await issuer?.close();
  await nats?.dispose();
});

describe("gateway faults", () => {
  it("gives exactly one delivery per idempotency key when a gateway dies mid-publish", async () => {
    const [a, b] = [await spawnGateway(), await spawnGateway()];
    const token = await issuer.token();
    const topic = uniqueName("keyed");
    const keys = Array.from({ length: 2000 }, (_, i) => `order-${i}`);
    const publish = (url: string, key: string) =>
      api(url, token).publish(topic, key, { "vqs-idempotency-key": key });

    // 20 clients publish through A, one key after another; A is killed while they are busy, and
    // they go on (their requests now fail) until every key was tried once.
    const statuses: number[] = keys.map(() => -1);
    let next = 0;
    const worker = async () => {
      while (next < keys.length) {
        const i = next++;
        statuses[i] = await publish(a.url, keys[i]!).then(
          (r) => r.status,
          () => 0,
        );
      }
    };
    const workers = Array.from({ length: 20 }, worker);
    // The kill comes once 200 are answered, however long a loaded machine takes to get there.
    await eventually(() => statuses.filter((s) => s === 201).length >= 200, 60_000, 20);
    a.child.kill("SIGKILL");
    await Promise.all(workers);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(200);
    expect(statuses.filter((s) => s === 0).length).toBeGreaterThan(100); // the kill cut them
    // Clients retry what they did not see acknowledged, with the same key, through B; a
    // connection reset (B takes ~1,800 new connections at once) is not an acknowledgement either.
    // They retry for as long as a client would wait out a failover (on a machine running other
    // suites, five tries a second apart were once not enough on nats-server 2.9).
    const giveUpAt = Date.now() + 30_000;
    await Promise.all(
      keys.map(async (k, i) => {
        if (statuses[i] === 201) return;
        let status = -1;
        const stored = await eventually(
          async () =>
            (status = await publish(b.url, k).then(
              (r) => r.status,
              () => 0,
            )) === 201,
          Math.max(0, giveUpAt - Date.now()),
          200,
        );
        if (stored) return;
        throw new Error(`publish of ${k} kept failing (last answer: ${status})`);
      }),
    );
    const seen: string[] = [];
    for (;;) {
      const res = await api(b.url, token).receive(topic, "g", { "vqs-max-messages": "10" });
      if (res.status === 204) break;
      for (const p of await parts(res)) seen.push(p.body.toString());
    }
    console.log("gateway killed mid-publish", {
      keys: keys.length,
      answered201BeforeKill: statuses.filter((s) => s === 201).length,
      cutOrRefused: statuses.filter((s) => s === 0).length,
      delivered: seen.length,
    });
    expect(seen.sort()).toEqual([...keys].sort());
    b.child.kill("SIGKILL");
  }, 120_000);

  it("redelivers through another gateway the leases a killed gateway's consumers held", async () => {
    const [a, b] = [await spawnGateway(), await spawnGateway()];
    const token = await issuer.token();
    const topic = uniqueName("leased");
    for (let i = 0; i < 5; i++) await api(b.url, token).publish(topic, `m${i}`);
    const held = await parts(
      await api(a.url, token).receive(topic, "workers", {
        "vqs-max-messages": "10",
        "vqs-visibility-timeout-seconds": "2",
      }),
    );
    expect(held).toHaveLength(5);
    a.child.kill("SIGKILL");
    expect((await api(b.url, token).receive(topic, "workers")).status).toBe(204);
    // Back when the 2 s leases run out at the server.
    const again: Awaited<ReturnType<typeof parts>> = [];
    await eventually(
      async () => {
        const res = await api(b.url, token).receive(topic, "workers", { "vqs-max-messages": "10" });
        again.push(...(res.status === 200 ? await parts(res) : []));
        return again.length >= 5;
      },
      10_000,
      100,
    );
    expect(again.map((p) => p.body.toString()).sort()).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    expect(again.every((p) => p.headers.get("vqs-delivery-count") === "2")).toBe(true);
    b.child.kill("SIGKILL");
  }, 60_000);

  it("delivers delayed messages when due after their gateway died and NATS restarted", async () => {
    const a = await spawnGateway();
    const token = await issuer.token();
    const topic = uniqueName("delayed");
    const ids: string[] = [];
    const publishedAt = Date.now();
    for (let i = 0; i < 50; i++) {
      const res = await api(a.url, token).publish(topic, `d${i}`, { "vqs-delay-seconds": "8" });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { messageId: string }).messageId);
    }
    a.child.kill("SIGKILL");
    await nats.stop();
    restarted = await startNatsServer({ ...nats.options, port: nats.port });
    const b = await spawnGateway();
    // Not due yet (unless this machine took that long to restart everything).
    if (Date.now() < publishedAt + 7000) {
      expect((await api(b.url, token).receive(topic, "g")).status).toBe(204);
    }
    const seen = new Map<string, string | null>();
    // Due 8 s after their publish. A timer the killed gateway held unanswered comes back after
    // the schedule consumer's ack wait (30 s): its message is that much late, never lost.
    await eventually(
      async () => {
        const res = await api(b.url, token).receive(topic, "g", { "vqs-max-messages": "10" });
        for (const p of res.status === 200 ? await parts(res) : []) {
          const id = p.headers.get("vqs-message-id")!;
          expect(seen.has(id)).toBe(false);
          seen.set(id, p.headers.get("vqs-delivery-count"));
        }
        return seen.size >= ids.length;
      },
      Math.max(0, publishedAt + 8500 - Date.now()) + 45_000,
      200,
    );
    expect([...seen.keys()].sort()).toEqual([...ids].sort());
    expect([...seen.values()].every((c) => c === "1")).toBe(true);
    b.child.kill("SIGKILL");
  }, 90_000);
});

// Graceful shutdown under load: two gateways take publishes and receives; one is shut down the
// way SIGTERM does it. Clients that route by /readyz (as a load balancer does) see no reset
// connection: only answers, retryable 503s, or refused connections. No publish answered 201 is
// lost. A client that ignores readiness and keeps calling the stopping gateway can meet a reset
// at the instant the listener closes (a TCP race no server avoids); retrying with its
// idempotency key through the other gateway, it gets exactly one delivery per key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { shutDown } from "../../../src/shutdown.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { eventually } from "../../helpers/wait.js";

let nats: TestNats;
let issuer: TestIssuer;
let gateways: TestGateway[];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gateways = [await startGateway(nats.url, issuer), await startGateway(nats.url, issuer)];
});

afterAll(async () => {
  for (const g of gateways ?? []) await g.close().catch(() => undefined);
  await issuer?.close();
  await nats?.dispose();
});

/** Why a request failed: a cause code such as ECONNREFUSED, or the error's message. */
function failureCode(err: unknown): string {
  const cause = (err as { cause?: { code?: string } }).cause;
  return cause?.code ?? String(err);
}

describe("graceful shutdown", () => {
  it("loses no acknowledged publish and resets no connection when a gateway stops mid-load", async () => {
    const token = await issuer.token();
    const topic = uniqueName("shutdown");
    const ready = gateways.map(() => true);
    let stopPolling = false;
    const polling = (async () => {
      while (!stopPolling) {
        await Promise.all(
          gateways.map(async (g, i) => {
            ready[i] = await fetch(`${g.url}/readyz`).then(
              (r) => r.status === 200,
              () => false,
            );
          }),
        );
        await sleep(20);
      }
    })();
    const pick = (n: number) => {
      const candidates = gateways.map((_, i) => i).filter((i) => ready[i]);
      return gateways[candidates[n % candidates.length] ?? 0]!;
    };

    const acked = new Set<string>();
    const received = new Set<string>();
    const bodies: string[] = [];
    const violations: string[] = [];
    const statuses = new Map<string, number>();
    const count = (k: string) => statuses.set(k, (statuses.get(k) ?? 0) + 1);
    let producing = true;
    let n = 0;

    const producer = async () => {
      while (producing) {
        const g = pick(n++);
        try {
          const res = await api(g.url, token).publish(topic, `m${n}`);
          count(String(res.status));
          if (res.status === 201)
            acked.add(((await res.json()) as { messageId: string }).messageId);
          else if (res.status !== 503) violations.push(`publish answered ${res.status}`);
          else await res.text();
        } catch (err) {
          const code = failureCode(err);
          count(code);
          if (code !== "ECONNREFUSED") violations.push(`publish failed: ${code}`);
        }
      }
    };
    let consuming = true;
    const consumer = async () => {
      while (consuming) {
        const g = pick(n++);
        try {
          const q = api(g.url, token);
          // Short leases: a message whose receive answer was cut comes back within the drain.
          const res = await q.receive(topic, "workers", {
            "vqs-max-messages": "10",
            "vqs-visibility-timeout-seconds": "2",
          });
          if (res.status === 204) {
            await sleep(10);
            continue;
          }
          if (res.status !== 200) {
            await res.text();
            if (res.status !== 503) violations.push(`receive answered ${res.status}`);
            continue;
          }
          for (const p of await parts(res)) {
            received.add(p.headers.get("vqs-message-id")!);
            bodies.push(p.body.toString());
            const ack = await q.ack(topic, "workers", p.headers.get("vqs-receipt-handle")!);
            if (ack.status !== 204 && ack.status !== 503)
              violations.push(`ack answered ${ack.status}`);
          }
        } catch (err) {
          const code = failureCode(err);
          if (code !== "ECONNREFUSED") violations.push(`receive failed: ${code}`);
        }
      }
    };

    // A client that ignores readiness and keeps calling the stopping gateway directly, with an
    // idempotency key per message; whatever fails it retries through the other gateway.
    let stubborn = true;
    const directKeys: string[] = [];
    const stubbornClient = async () => {
      for (let k = 0; stubborn; k++) {
        const key = `direct-${k}`;
        directKeys.push(key);
        const headers = { "vqs-idempotency-key": key };
        let res = await api(gateways[0]!.url, token)
          .publish(topic, key, headers)
          .catch((err: unknown) => failureCode(err));
        count(`direct ${typeof res === "string" ? res : res.status}`);
        if (typeof res !== "string" && res.status !== 201 && res.status !== 503) {
          violations.push(`direct publish answered ${res.status}`);
        }
        while (typeof res === "string" || res.status !== 201) {
          if (typeof res !== "string") await res.text();
          res = await api(gateways[1]!.url, token)
            .publish(topic, key, headers)
            .catch((err: unknown) => failureCode(err));
        }
        acked.add(((await res.json()) as { messageId: string }).messageId);
      }
    };
    const direct = stubbornClient();
    const load = [producer(), producer(), producer(), consumer(), consumer()];
    // The stop comes once the load runs: some publishes answered 201 already (one second was
    // enough alone, not always with other suites taking the cores).
    const loadStarted = Date.now();
    await eventually(() => Date.now() - loadStarted >= 1000 && acked.size > 20, 10_000);
    const before = acked.size;
    await shutDown(gateways[0]!.gateway, { delayMs: 1000, log: createLogger("silent") });
    // The load goes on past the close: more publishes answered 201 (through the other gateway),
    // and the stubborn client met the closed one and retried.
    const directFailures = () =>
      [...statuses].reduce((sum, [k, v]) => (/^direct (?!201$)/.test(k) ? sum + v : sum), 0);
    const [ackedAtClose, failedAtClose] = [acked.size, directFailures()];
    const wentOn = await eventually(
      () => acked.size >= ackedAtClose + 20 && directFailures() > failedAtClose,
      10_000,
    );
    expect(wentOn, JSON.stringify(Object.fromEntries(statuses))).toBe(true);
    producing = false;
    stubborn = false;
    await Promise.all([...load.slice(0, 3), direct]);
    // Drain: everything answered 201 must come out, through the gateway still running.
    await eventually(() => [...acked].every((id) => received.has(id)), 15_000);
    consuming = false;
    stopPolling = true;
    await Promise.all([...load.slice(3), polling]);

    console.log("gateway shut down under load", {
      answered201: acked.size,
      delivered: received.size,
      statuses: Object.fromEntries(statuses),
    });
    expect(before).toBeGreaterThan(20);
    expect(acked.size).toBeGreaterThan(before);
    expect(violations).toEqual([]);
    // A duplicate's ID never arrives itself: the direct keys are checked by their bodies.
    expect([...acked].filter((id) => !received.has(id) && !id.startsWith("x"))).toEqual([]);
    for (const key of directKeys)
      expect(
        bodies.filter((b) => b === key),
        key,
      ).toHaveLength(1);
  });
});

// The failover contract on JetStream: a gateway's Failover deferring into a neighbour region's
// nats-server (its VQS_DEFERRED_<home> stream) and relocating home into the gateway's
// JetStreamBroker on another real nats-server, time passing for real.
import { afterAll, beforeAll, expect } from "vitest";
import type { Failover } from "../../src/nats/failover/failover.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { sleep } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { startTestNats, type TestNats } from "../helpers/processes/nats.js";
import { deferrerContract } from "./deferrer-contract.js";
import { eventually } from "../helpers/wait.js";

let home: TestNats;
let neighbour: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;

beforeAll(async () => {
  home = await startTestNats();
  neighbour = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(home.url, issuer, {
    env: { VQS_FAILOVER_REGIONS: `sfo1=${neighbour.url}` },
    config: { requestTimeoutMs: 1000 },
  });
  // The neighbour is connected in the background: wait for it (a few seconds at most).
  expect(await eventually(() => failover().canDefer(), 5000)).toBe(true);
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await home?.dispose();
  await neighbour?.dispose();
});

const failover = (): Failover => gw.gateway.jetstream.failover!;

deferrerContract("JetStream", {
  deferrer: failover,
  broker: () => gw.gateway.jetstream.broker,
  relocate: async () => {
    await sleep(200);
  },
  patience: 50,
  // The neighbour's server goes away: the publish times out (1 s) and the deferral fails.
  cutNeighbours: async () => {
    await neighbour.stop();
  },
});

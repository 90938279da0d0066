// The usual setup of an integration test file: one nats-server, one token issuer and N gateways,
// started before the file's tests and stopped after them. Read the fields inside tests (they are
// set in beforeAll).
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { startGateway, type TestGateway, type TestGatewayOptions } from "./gateway.js";
import { api } from "./http.js";
import { startIssuer, type TestIssuer } from "./issuer.js";
import { startTestNats, type TestNats } from "./processes/nats.js";

export interface Fixture {
  readonly nats: TestNats;
  readonly issuer: TestIssuer;
  readonly gateways: readonly TestGateway[];
}

/**
 * `nats.tmpDir`: where the server's store goes (default tmpdir()); `nats.maxPayload`: its
 * max_payload (default 2 MiB, room for a 1 MiB body and its headers).
 */
export function useGateways(
  count: number,
  options: TestGatewayOptions = {},
  nats: { tmpDir?: string; maxPayload?: number } = {},
): Fixture {
  const fixture = { gateways: [] as TestGateway[] } as {
    nats: TestNats;
    issuer: TestIssuer;
    gateways: TestGateway[];
  };
  beforeAll(async () => {
    fixture.nats = await startTestNats(nats);
    fixture.issuer = await startIssuer();
    for (let i = 0; i < count; i++) {
      fixture.gateways.push(await startGateway(fixture.nats.url, fixture.issuer, options));
    }
  });
  afterAll(async () => {
    await Promise.all(fixture.gateways.map((g) => g.close()));
    await fixture.issuer?.close();
    await fixture.nats?.dispose();
  });
  return fixture;
}

export interface ConnectedFixture {
  readonly nats: TestNats;
  readonly issuer: TestIssuer;
  readonly gw: TestGateway;
  /** The gateway's API, with a token of the issuer's default claims. */
  readonly q: ReturnType<typeof api>;
  /** The test's own connection to the nats-server, and its JetStream manager. */
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
}

/**
 * One gateway (`options`) on a nats-server of its own (`nats.bin`: which server), and the test's
 * own connection to that server.
 */
export function useConnectedGateway(
  options: TestGatewayOptions = {},
  nats: { bin?: string } = {},
): ConnectedFixture {
  const fixture = {} as {
    -readonly [K in keyof ConnectedFixture]: ConnectedFixture[K];
  };
  beforeAll(async () => {
    fixture.nats = await startTestNats(nats);
    fixture.issuer = await startIssuer();
    fixture.gw = await startGateway(fixture.nats.url, fixture.issuer, options);
    fixture.q = api(fixture.gw.url, await fixture.issuer.token());
    fixture.nc = await connect({ servers: fixture.nats.url });
    fixture.jsm = await jetstreamManager(fixture.nc);
  });
  afterAll(async () => {
    await fixture.nc?.close();
    await fixture.gw?.close();
    await fixture.issuer?.close();
    await fixture.nats?.dispose();
  });
  return fixture;
}

/**
 * A gateway whose large bodies are seen expiring and orphaned in seconds: a body outlives its
 * message's retention by a second (largeBodyTtlMarginSeconds), an uncommitted body is an
 * orphan a second after its last chunk, and the sweep runs only when a test asks.
 */
export function useLargeBodyGateway(): ConnectedFixture {
  return useConnectedGateway({
    config: {
      largeBodyTtlMarginSeconds: 1,
      largeBodySweepSeconds: 86_400,
      largeBodyOrphanGraceSeconds: 1,
    },
  });
}

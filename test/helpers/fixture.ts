// The usual setup of an integration test file: one nats-server, one token issuer and N gateways,
// started before the file's tests and stopped after them. Read the fields inside tests (they are
// set in beforeAll).
import { afterAll, beforeAll } from "vitest";
import { startGateway, type TestGateway, type TestGatewayOptions } from "./gateway.js";
import { startIssuer, type TestIssuer } from "./issuer.js";
import { startTestNats, type TestNats } from "./processes/nats.js";

export interface Fixture {
  readonly nats: TestNats;
  readonly issuer: TestIssuer;
  readonly gateways: readonly TestGateway[];
}

/** `nats.tmpDir`: where the server's store goes (default tmpdir()). */
export function useGateways(
  count: number,
  options: TestGatewayOptions = {},
  nats: { tmpDir?: string } = {},
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

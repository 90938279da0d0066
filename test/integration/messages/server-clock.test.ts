// The gateways' common clock follows the NATS server's, whatever the host's clock says: a
// gateway whose clock is 10 minutes off, or is stepped by minutes while it runs, still computes
// the same "now" as the server.
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerClock } from "../../../src/nats/core/server-clock.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startTestNats();
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

describe("server clock", () => {
  it("estimates NATS server time from a host clock that is off by minutes", async () => {
    const kv = await new Kvm(jetstream(nc)).create("CLOCK_TEST", { history: 1 });
    for (const skewMs of [0, 600_000, -600_000]) {
      const clock = new ServerClock(() => Date.now() + skewMs);
      await clock.sync(kv, "clock.test");
      // The server runs on this machine, so its time is this machine's (within a round trip).
      expect(Math.abs(clock.now() - Date.now())).toBeLessThan(250);
      expect(Math.abs(clock.offsetMs + skewMs)).toBeLessThan(250);
    }
  });

  it("keeps the server's time when the host clock is stepped after a measurement", async () => {
    const kv = await new Kvm(jetstream(nc)).create("CLOCK_STEP_TEST", { history: 1 });
    let stepMs = 0;
    const clock = new ServerClock(() => Date.now() + stepMs);
    await clock.sync(kv, "clock.step");
    for (const step of [5 * 60_000, -5 * 60_000]) {
      stepMs = step; // as NTP stepping the host clock between two measurements
      expect(Math.abs(clock.now() - Date.now())).toBeLessThan(250);
    }
  });

  it("tells whole milliseconds, as Date.now() does (durations from it go to the server)", async () => {
    const kv = await new Kvm(jetstream(nc)).create("CLOCK_WHOLE_TEST", { history: 1 });
    let monotonic = 1000.25;
    const clock = new ServerClock(Date.now, () => monotonic);
    await clock.sync(kv, "clock.whole");
    for (const t of [1000.4, 1234.567, 5000.5]) {
      monotonic = t;
      expect(Number.isInteger(clock.now())).toBe(true);
    }
  });
});

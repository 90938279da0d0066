// A large-body store larger than the servers' JetStream storage (VQS_LARGE_BODY_STORE_BYTES'
// 10 GiB default on a server with max_file_store 64 MiB): the store cannot be created, large
// publishes answer 503 large_body_store_unavailable and the log says what to set; small ones go
// on, and a store that fits works.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

const MiB = 1024 * 1024;

let nats: TestNats;
let issuer: TestIssuer;
let tooLarge: TestGateway;
let fits: TestGateway;
const lines: string[] = [];

beforeAll(async () => {
  nats = await startTestNats({ maxFileStore: 64 * MiB });
  issuer = await startIssuer();
  tooLarge = await startGateway(nats.url, issuer, {
    logger: createLogger("warn", { write: (line: string) => void lines.push(line) }),
  });
});

afterAll(async () => {
  await fits?.close();
  await tooLarge?.close();
  await issuer?.close();
  await nats?.dispose();
});

describe("a large-body store larger than the servers' storage", () => {
  it("answers 503 large_body_store_unavailable and logs what to set; small publishes go on", async () => {
    const q = api(tooLarge.url, await issuer.token());
    const topic = uniqueName("store-size");
    for (let i = 0; i < 2; i++) {
      const res = await q.publish(topic, randomBytes(2 * MiB));
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("60");
      expect(await errorCode(res)).toBe("large_body_store_unavailable");
    }
    expect((await q.publish(topic, randomBytes(1000))).status).toBe(201);
    const logged = lines.filter((l) => l.includes("VQS_LARGE_BODY_STORE_BYTES"));
    expect(logged).toHaveLength(1); // once a minute at most
    expect(JSON.parse(logged[0]!)).toMatchObject({ level: 50, maxStoreBytes: 10 * 1024 ** 3 });
  });

  it("takes large bodies once the store fits", async () => {
    fits = await startGateway(nats.url, issuer, {
      env: { VQS_LARGE_BODY_STORE_BYTES: String(16 * MiB) },
    });
    const q = api(fits.url, await issuer.token());
    const topic = uniqueName("store-fits");
    const body = randomBytes(2 * MiB);
    expect((await q.publish(topic, body)).status).toBe(201);
    const got = await q.receive(topic, "g");
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).includes(body)).toBe(true);
  });
});

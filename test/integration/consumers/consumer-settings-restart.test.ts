// Consumer settings across a NATS restart: the documents are on disk, each gateway keeps
// answering from memory meanwhile, and its watch of the bucket resumes, so changes made after
// the restart (on another gateway) still reach it. A server that comes back without its data
// is followed too: the bucket is made again, and what it no longer holds no longer applies.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerProcess } from "../../../src/dev/nats-server-process.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startIssuer, TEAM_A, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { eventually, settingsApi } from "../../helpers/settings.js";

let nats: TestNats;
let restarted: NatsServerProcess | null = null;
let issuer: TestIssuer;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  for (let i = 0; i < 2; i++) {
    gateways.push(await startGateway(nats.url, issuer, { config: { requestTimeoutMs: 1000 } }));
  }
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await restarted?.stop();
  await issuer?.close();
  await nats?.dispose();
});

const ns = makeNamespace(
  TEAM_A.owner_id as string,
  TEAM_A.project_id as string,
  TEAM_A.environment as string,
  null,
);
const afterSeconds = (i: number, topic: string) =>
  gateways[i]!.gateway.settings.effective(ns, topic, "g")?.retry.afterSeconds ?? null;

async function ready(g: TestGateway): Promise<boolean> {
  return eventually(async () => (await fetch(`${g.url}/readyz`)).status === 200, 20_000);
}

describe("consumer settings across a NATS restart", () => {
  it("keep their documents and follow changes made after the restart", async () => {
    const [a, b] = [
      settingsApi(gateways[0]!.url, await issuer.token()),
      settingsApi(gateways[1]!.url, await issuer.token()),
    ];
    const kept = uniqueName("kept");
    const dropped = uniqueName("dropped");
    expect((await a.put(kept, "g", { retry: { afterSeconds: 1 } })).status).toBe(200);
    expect((await a.put(dropped, "g", { retry: { afterSeconds: 2 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(1, dropped) === 2)).toBe(true);
    // A handle B gives out before the restart (for the group epochs below).
    const [qa, qb] = [
      api(gateways[0]!.url, await issuer.token()),
      api(gateways[1]!.url, await issuer.token()),
    ];
    const sought = uniqueName("sought");
    expect((await qa.publish(sought, "m")).status).toBe(201);
    const leased = await qb.receive(sought, "s", { "vqs-visibility-timeout-seconds": "600" });
    const handle = (await parts(leased))[0]!.headers.get("vqs-receipt-handle")!;

    await nats.stop();
    // Long enough for the server to forget the gateways' watch consumers (ephemeral, 5 s).
    await sleep(6000);
    // While NATS is away, what applies is still known (from memory); reads that decide fail.
    expect(afterSeconds(1, kept)).toBe(1);
    expect((await b.get(kept, "g")).status).toBe(503);
    expect((await b.list()).map((s) => s.topic).sort()).toEqual([dropped, kept].sort());

    restarted = await startNatsServer(nats.options);
    // Both gateways hear of it at once, before either writes.
    expect(await ready(gateways[0]!)).toBe(true);
    expect(await ready(gateways[1]!)).toBe(true);
    // On disk: a current read on the other gateway finds the document.
    const got = await eventually(async () => (await b.get(kept, "g")).status === 200, 20_000);
    expect(got).toBe(true);

    // Changes made through A after the restart reach B's memory: its watch resumed.
    const added = uniqueName("added");
    expect((await a.put(added, "g", { retry: { afterSeconds: 3 } })).status).toBe(200);
    expect((await a.delete(dropped, "g")).status).toBe(204);
    expect((await a.put(kept, "g", { retry: { afterSeconds: 4 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(1, added) === 3, 20_000)).toBe(true);
    expect(await eventually(() => afterSeconds(1, dropped) === null, 5000)).toBe(true);
    expect(await eventually(() => afterSeconds(1, kept) === 4, 5000)).toBe(true);
    // ...and B's own writes reach A.
    const fromB = uniqueName("fromb");
    expect((await b.put(fromB, "g", { retry: { afterSeconds: 5 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(0, fromB) === 5, 20_000)).toBe(true);
    // Group epochs are followed the same way: a seek through A after the restart makes B refuse
    // the handle it gave out before (else its ack would settle the new consumer's delivery).
    const seek = await fetch(`${gateways[0]!.url}/api/v3/topic/${sought}/consumer/s/seek`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await issuer.token()}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ to: "earliest" }),
    });
    expect(seek.status).toBe(200);
    const again = await qb.receive(sought, "s");
    expect((await parts(again)).map((p) => p.body.toString())).toEqual(["m"]);
    const old = await qb.ack(sought, "s", handle);
    expect([old.status, await errorCode(old)]).toEqual([409, "receipt_handle_stale"]);
  });

  it("follow a server that came back without its data", async () => {
    const [a, b] = [
      settingsApi(gateways[0]!.url, await issuer.token()),
      settingsApi(gateways[1]!.url, await issuer.token()),
    ];
    const before = uniqueName("before");
    expect((await a.put(before, "g", { retry: { afterSeconds: 6 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(1, before) === 6)).toBe(true);

    await restarted?.stop();
    restarted = await startNatsServer({ ...nats.options, storeDir: `${nats.options.storeDir}-2` });
    expect(await ready(gateways[0]!)).toBe(true);
    expect(await ready(gateways[1]!)).toBe(true);
    // The first write makes the bucket again; the other gateway follows the new one.
    const after: string[] = [];
    for (let i = 0; i < 3; i++) {
      after.push(uniqueName("after"));
      const put = await eventually(
        async () => (await a.put(after[i]!, "g", { retry: { afterSeconds: 7 } })).status === 200,
        20_000,
      );
      expect(put).toBe(true);
    }
    for (const t of after) {
      expect(await eventually(() => afterSeconds(1, t) === 7, 20_000)).toBe(true);
    }
    // What the server no longer holds no longer applies, on either gateway.
    expect(await eventually(() => afterSeconds(1, before) === null, 20_000)).toBe(true);
    expect(await eventually(() => afterSeconds(0, before) === null, 20_000)).toBe(true);
    expect((await b.get(before, "g")).status).toBe(404);
    expect((await b.list()).map((s) => s.topic).sort()).toEqual([...after].sort());
  });
});

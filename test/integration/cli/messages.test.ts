// `vqs receive`, `vqs ack`, `vqs tail` and `vqs dlq redrive`, run as a user runs them (spawned
// processes) against a real gateway: fields of received messages, --ack, long polling, payload
// previews, dead-letter origins; a tail that follows new messages, ends on Ctrl-C or --count and
// leaves a real group's messages in place; a redrive in rounds, interrupted and resumed without
// moving a message twice; exit codes.
import { beforeAll, describe, expect, it } from "vitest";
import type { ReceivedMessage } from "../../../src/cli/api-client.js";
import type { AckResult, ReceiveResult } from "../../../src/cli/commands/messages.js";
import type { RedriveReport } from "../../../src/cli/commands/dlq.js";
import { runCli, startCli, type CliRun } from "../../helpers/cli.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { clockPast, eventually } from "../../helpers/wait.js";

const fx = useGateways(1);
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token({ project_id: uniqueName("prj") });
});

const env = () => ({ VQS_URL: fx.gateways[0]!.url, VQS_TOKEN: token });
const vqs = (args: string[]): Promise<CliRun> => runCli(args, { env: env() });
const q = () => api(fx.gateways[0]!.url, token);

async function publish(topic: string, body: string | Uint8Array, contentType?: string) {
  const res = await q().publish(topic, body, contentType ? { "content-type": contentType } : {});
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

async function receiveJson(args: string[]): Promise<ReceiveResult[]> {
  const r = await vqs(["receive", ...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ReceiveResult[];
}

/** Every message a group holds, through the API, acknowledged: bodies and delivery counts. */
async function drain(topic: string, group: string): Promise<{ body: string; count: number }[]> {
  const out: { body: string; count: number }[] = [];
  for (;;) {
    const res = await q().receive(topic, group, {
      accept: "application/x-ndjson",
      "vqs-max-messages": "10",
    });
    if (res.status === 204) return out;
    const lines = (await res.text()).trim().split("\n");
    for (const line of lines) {
      const m = JSON.parse(line) as ReceivedMessage;
      out.push({ body: Buffer.from(m.body, "base64").toString(), count: m.deliveryCount });
      expect((await q().ack(topic, group, m.receiptHandle)).status).toBe(204);
    }
  }
}

async function putSettings(topic: string, group: string, body: unknown): Promise<void> {
  const res = await q().call("PUT", `${topic}/consumer/${group}/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  // Answered once stored; the gateway that stored it (the only one here) applies it at once.
  expect(res.status, await res.clone().text()).toBe(200);
}

/** How many receives wait at the gateway (long polls, the tool's among them). */
const waitingReceives = () => fx.gateways[0]!.gateway.queue.waitingReceives;

/** The messages `topic` holds, as the management API counts them. */
async function stored(topic: string): Promise<number> {
  const res = await q().call("GET", topic);
  return res.status === 200 ? ((await res.json()) as { messages: number }).messages : 0;
}

/**
 * `n` messages m0..m(n-1) of `topic` dead-lettered by group "workers" into `<topic>-dead`:
 * received once with a 1 s lease, and received again once that ran out (which moves them).
 */
async function deadLetters(topic: string, n: number): Promise<string> {
  const dlq = `${topic}-dead`;
  await putSettings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
  for (let i = 0; i < n; i++) await publish(topic, `m${i}`);
  for (let got = 0; got < n;) {
    const res = await q().receive(topic, "workers", {
      accept: "application/x-ndjson",
      "vqs-max-messages": "10",
      "vqs-visibility-timeout-seconds": "1",
    });
    got += res.status === 200 ? (await res.text()).trim().split("\n").length : 0;
  }
  // Once the leases run out, the next receive moves them.
  const moved = await eventually(
    async () => {
      await (await q().receive(topic, "workers", { "vqs-max-messages": "10" })).arrayBuffer();
      return (await stored(dlq)) === n;
    },
    15_000,
    100,
  );
  expect(moved).toBe(true);
  return dlq;
}

describe("vqs receive", () => {
  it("prints published messages with their fields; vqs ack acknowledges by receipt handle", async () => {
    const topic = uniqueName("rcv");
    const first = await publish(topic, '{"n":1}', "application/json");
    const second = await publish(topic, Buffer.from("two")); // no Content-Type
    const got = await receiveJson([topic, "g", "--max", "10", "--visibility", "30"]);
    expect(got.map((m) => m.messageId)).toEqual([first, second]);
    const [a, b] = got as [ReceiveResult, ReceiveResult];
    expect(a).toMatchObject({ deliveryCount: 1, contentType: "application/json" });
    expect(Buffer.from(a.body, "base64").toString()).toBe('{"n":1}');
    expect(Buffer.from(b.body, "base64").toString()).toBe("two");
    expect(b.contentType).toBe("application/octet-stream");
    expect(Date.parse(a.expiresAt) - Date.parse(a.timestamp)).toBe(86_400_000);
    expect(Math.abs(Date.parse(a.timestamp) - Date.now())).toBeLessThan(30_000);
    expect(a.receiptHandle).toMatch(/^[A-Za-z0-9_-]{54}$/);
    expect(a.acknowledged).toBeUndefined();

    const acked = await vqs(["ack", topic, "g", a.receiptHandle, b.receiptHandle, "--json"]);
    expect(acked.code, acked.stderr).toBe(0);
    expect(JSON.parse(acked.stdout)).toEqual([
      { receiptHandle: a.receiptHandle, acknowledged: true },
      { receiptHandle: b.receiptHandle, acknowledged: true },
    ] satisfies AckResult[]);
    // Acknowledged: the group holds nothing, whatever the leases would have said.
    expect(await drain(topic, "g")).toEqual([]);
  });

  it("shows each message as a block with a preview and the receipt handle", async () => {
    const topic = uniqueName("rcv");
    const id = await publish(topic, "hello\nworld", "text/plain");
    const r = await vqs(["receive", topic, "g"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^${id}  delivery 1  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  text/plain  11 B$`),
    );
    expect(lines[1]).toMatch(/^ {2}receipt handle {2}[A-Za-z0-9_-]{54}$/);
    expect(lines[2]).toBe("  hello\\nworld");
    expect(lines[3]).toBe("1 message, leased for 60 s");
    expect(r.stderr).toContain(`vqs ack ${topic} g <receipt-handle>`);
    expect(r.stdout).not.toContain("\x1b[");
  });

  it("--ack acknowledges what it printed: a later receive gets nothing", async () => {
    const topic = uniqueName("rcv");
    for (let i = 0; i < 3; i++) await publish(topic, `m${i}`);
    const got = await receiveJson([topic, "g", "--max", "10", "--visibility", "1", "--ack"]);
    expect(got.map((m) => [Buffer.from(m.body, "base64").toString(), m.acknowledged])).toEqual([
      ["m0", true],
      ["m1", true],
      ["m2", true],
    ]);
    // Acknowledged at the gateway: none is leased any more, none waits.
    const settled = async () => {
      const res = await q().call("GET", `${topic}/consumers`);
      const [g] = (
        (await res.json()) as { consumerGroups: { inFlight: number; backlog: number }[] }
      ).consumerGroups;
      return g?.inFlight === 0 && g.backlog === 0;
    };
    expect(await eventually(settled, 10_000)).toBe(true);
    expect(await receiveJson([topic, "g", "--max", "10"])).toEqual([]);
  });

  it("--wait 2 on an empty group waits about 2 s, then exits 0 saying no messages", async () => {
    const topic = uniqueName("rcv");
    await publish(topic, "x");
    await receiveJson([topic, "g", "--ack"]);
    const started = Date.now();
    const r = await vqs(["receive", topic, "g", "--wait", "2"]);
    const took = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("no messages\n");
    expect(took).toBeGreaterThanOrEqual(2000);
    expect(took).toBeLessThan(10_000); // spawning the tool takes a while on a busy machine
    // And a message that arrives during the wait ends it at once.
    const waiting = startCli(["receive", topic, "g", "--wait", "20", "--json", "--ack"], {
      env: env(),
    });
    await expect.poll(waitingReceives, { timeout: 15_000 }).toBe(1);
    await publish(topic, "late");
    const late = await waiting.done;
    expect(late.code, late.stderr).toBe(0);
    const body = (JSON.parse(late.stdout) as ReceiveResult[]).map((m) =>
      Buffer.from(m.body, "base64").toString(),
    );
    expect(body).toEqual(["late"]);
  });

  it("previews a binary payload as hex", async () => {
    const topic = uniqueName("rcv");
    await publish(topic, new Uint8Array([0, 1, 2, 0xff, 0x7f, 0x41]));
    const r = await vqs(["receive", topic, "g", "--ack"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[1]).toBe("  hex 00 01 02 ff 7f 41");
    expect(r.stdout).toContain("1 message, acknowledged");
  });

  it("shows where a dead-letter copy came from", async () => {
    const topic = uniqueName("rcv");
    const dlq = `${topic}-dead`;
    await putSettings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
    const id = await publish(topic, "poison");
    expect(await receiveJson([topic, "workers", "--visibility", "1"])).toHaveLength(1);
    // Its second delivery, once the 1 s lease ran out, moves it instead.
    const moved = async () => {
      await (await q().receive(topic, "workers")).arrayBuffer();
      return (await stored(dlq)) === 1;
    };
    expect(await eventually(moved, 15_000, 100)).toBe(true);
    expect(await receiveJson([topic, "workers"])).toEqual([]);

    const [copy] = await receiveJson([dlq, "ops", "--visibility", "0"]);
    expect(copy?.deadLetter).toEqual({
      topic,
      consumerGroup: "workers",
      messageId: id,
      deliveryCount: 2,
    });
    expect(Buffer.from(copy!.body, "base64").toString()).toBe("poison");
    const text = await vqs(["receive", dlq, "ops"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split("\n")[1]).toBe(
      `  dead letter of ${topic}/workers (message ${id}, 2 deliveries)`,
    );
  });

  it("exit codes: bad flags 2, a refused handle 1, an unreachable server 3", async () => {
    // (Every usage error, in process: test/unit/cli/program.test.ts.)
    expect((await vqs(["receive", "t", "g", "--max", "11"])).code).toBe(2);
    const refused = await vqs(["ack", "t", "g", "AAAA", "--json"]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toEqual([
      {
        receiptHandle: "AAAA",
        acknowledged: false,
        error: expect.objectContaining({ status: 400, code: "invalid_receipt_handle" }) as object,
      },
    ]);
    const down = await runCli(["receive", "t", "g"], {
      env: { VQS_URL: "http://127.0.0.1:1", VQS_TOKEN: token },
    });
    expect(down.code).toBe(3);
  });
});

/** The messages a `tail --json` printed (one JSON object per line). */
const printed = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as ReceivedMessage);
const bodies = (ms: ReceivedMessage[]) => ms.map((m) => Buffer.from(m.body, "base64").toString());

describe("vqs tail", () => {
  it("prints the messages published after it started, and ends after --count", async () => {
    const topic = uniqueName("tail");
    await publish(topic, "old-1");
    await publish(topic, "old-2");
    // The tail's start is taken to the second (the gateway's Date): the next second has begun.
    await clockPast(Math.floor(Date.now() / 1000) * 1000 + 999);
    const tail = startCli(["tail", topic, "--count", "3", "--json"], { env: env() });
    await tail.until((o) => o.stderr.includes("tailing"));
    const ids = [await publish(topic, "new-1"), await publish(topic, "new-2")];
    await tail.until((o) => printed(o.stdout).length === 2);
    ids.push(await publish(topic, "new-3", "text/plain"));
    const r = await tail.done;
    expect(r.code, r.stderr).toBe(0);
    const got = printed(r.stdout);
    expect(got.map((m) => m.messageId)).toEqual(ids);
    expect(bodies(got)).toEqual(["new-1", "new-2", "new-3"]);
    expect(got[2]?.contentType).toBe("text/plain");
    expect(r.stderr).toMatch(/tailing .* as group vqs-tail-[0-9a-f]{8}, messages published since/);
    expect(r.stderr).toContain("skipped 2 older messages");
    // Its own group: the topic's messages are all still there for a real one.
    expect((await drain(topic, "real")).map((m) => m.body)).toEqual([
      "old-1",
      "old-2",
      "new-1",
      "new-2",
      "new-3",
    ]);
  });

  it("--from-start prints what the topic holds first; the default text is one line each", async () => {
    const topic = uniqueName("tail");
    await publish(topic, "kept", "text/plain");
    await publish(topic, new Uint8Array([0xde, 0xad, 0xbe, 0xef])); // not UTF-8
    const r = await vqs(["tail", topic, "--from-start", "--count", "2"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+Z {2}m\S+ {2}text\/plain {2}kept$/);
    expect(lines[1]).toMatch(/^\S+Z {2}m\S+ {2}application\/octet-stream {2}hex de ad be ef$/);
  });

  it("ends promptly with exit 0 on Ctrl-C while it waits", async () => {
    const topic = uniqueName("tail");
    const tail = startCli(["tail", topic], { env: env() });
    await tail.until((o) => o.stderr.includes("tailing"));
    await expect.poll(waitingReceives, { timeout: 15_000 }).toBe(1); // inside its 20 s long poll
    const sent = Date.now();
    tail.child.kill("SIGINT");
    const r = await tail.done;
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - sent).toBeLessThan(3000);
    expect(r.stderr).toContain("stopped: 0 messages shown");
  });

  it("with --group and no --ack, what it printed is still there for the group", async () => {
    const topic = uniqueName("tail");
    for (let i = 0; i < 3; i++) await publish(topic, `m${i}`);
    const r = await vqs(["tail", topic, "--group", "billing", "--count", "3", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(bodies(printed(r.stdout))).toEqual(["m0", "m1", "m2"]);
    expect(r.stderr).toContain("released at once");
    // Released at once: the group's consumers get them, one delivery later.
    expect(await drain(topic, "billing")).toEqual([
      { body: "m0", count: 2 },
      { body: "m1", count: 2 },
      { body: "m2", count: 2 },
    ]);
  });

  it("with --group, a message nobody else takes is shown once, and released each time", async () => {
    const topic = uniqueName("tail");
    await putSettings(topic, "billing", {
      deadLetter: { topic: `${topic}-dead`, maxDeliveries: 50 },
    });
    await publish(topic, "only");
    const tail = startCli(["tail", topic, "--group", "billing", "--json"], { env: env() });
    // Back to the tail at once (nobody else receives), then let go 5 s.
    await tail.until((o) => o.stderr.includes("messages come back to the tail"));
    tail.child.kill("SIGINT");
    const r = await tail.done;
    expect(r.code, r.stderr).toBe(0);
    expect(bodies(printed(r.stdout))).toEqual(["only"]);
    expect(r.stderr).toContain("moves a message to");
    // Held by the tail's last release for 5 s, then the group's again.
    let back: { body: string }[] = [];
    expect(
      await eventually(async () => (back = await drain(topic, "billing")).length > 0, 15_000, 250),
    ).toBe(true);
    expect(back.map((m) => m.body)).toEqual(["only"]);
  });

  it("with --group and --ack, it consumes what it printed", async () => {
    const topic = uniqueName("tail");
    for (let i = 0; i < 2; i++) await publish(topic, `m${i}`);
    const r = await vqs(["tail", topic, "--group", "billing", "--ack", "--count", "2", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(bodies(printed(r.stdout))).toEqual(["m0", "m1"]);
    expect(await drain(topic, "billing")).toEqual([]);
  });

  it("a usage error exits 2", async () => {
    const r = await vqs(["tail", "t", "--ack"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--ack needs --group");
  });
});

describe("vqs dlq redrive", () => {
  it("moves every dead letter back in rounds; the source group gets each once, from delivery 1", async () => {
    const topic = uniqueName("rd");
    const dlq = await deadLetters(topic, 25);
    const r = await vqs(["dlq", "redrive", dlq, "--batch", "10", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ moved: 25, remaining: 0 } satisfies RedriveReport);
    const back = await drain(topic, "workers");
    expect(back.map((m) => m.body)).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`));
    expect(back.every((m) => m.count === 1)).toBe(true);

    const again = await vqs(["dlq", "redrive", dlq]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `moved 0 messages to the topics they came from; 0 remain in ${dlq}\n`,
    );
  });

  it("stopped by --limit and resumed, it moves each message once", async () => {
    const topic = uniqueName("rd");
    const dlq = await deadLetters(topic, 25);
    const part = await vqs(["dlq", "redrive", dlq, "--limit", "10", "--batch", "4", "--json"]);
    expect(part.code, part.stderr).toBe(0);
    expect(JSON.parse(part.stdout)).toEqual({ moved: 10, remaining: 15 });
    expect(part.stderr).toContain(`to move the rest: vqs dlq redrive ${dlq} --batch 4`);
    const rest = await vqs(["dlq", "redrive", dlq, "--json"]);
    expect(rest.code, rest.stderr).toBe(0);
    expect(JSON.parse(rest.stdout)).toEqual({ moved: 15, remaining: 0 });
    const back = (await drain(topic, "workers")).map((m) => m.body);
    expect(back.sort()).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`).sort());
  });

  it("Ctrl-C stops after the current round (exit 130); running it again moves the rest, none twice", async () => {
    const topic = uniqueName("rd");
    const dlq = await deadLetters(topic, 25);
    const run = startCli(["dlq", "redrive", dlq, "--batch", "1", "--json"], { env: env() });
    await run.until((o) => o.stderr.includes("redriving"));
    run.child.kill("SIGINT");
    const stopped = await run.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    const report = JSON.parse(stopped.stdout) as RedriveReport;
    expect(report.interrupted).toBe(true);
    expect(report.moved).toBeGreaterThanOrEqual(1);
    expect(report.moved + report.remaining).toBe(25);
    expect(stopped.stderr).toContain(`run it again to resume`);

    const rest = await vqs(["dlq", "redrive", dlq, "--to", topic, "--json"]);
    expect(rest.code, rest.stderr).toBe(0);
    expect(JSON.parse(rest.stdout)).toEqual({ moved: report.remaining, remaining: 0 });
    const back = (await drain(topic, "workers")).map((m) => m.body);
    expect(back.sort()).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`).sort());
  });

  it("a missing topic exits 1 with topic_not_found; bad flags exit 2", async () => {
    const missing = await vqs(["dlq", "redrive", uniqueName("nothing"), "--json"]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr.trimEnd().split("\n").at(-1)!)).toEqual({
      error: expect.objectContaining({ status: 404, code: "topic_not_found" }) as object,
    });
    const bad = await vqs(["dlq", "redrive", "t-dead", "--batch", "0"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--batch "0" must be a whole number from 1 to 10000');
  });
});

// `vqs publish`, the management commands (topics, topic, groups, keys, peek, purge, delete, seek,
// namespaces, --namespace), `vqs settings` and the tail's cleanup of its own group, run as a
// user runs them (spawned processes) against a real gateway: what each prints, what it changes
// on the server (checked through the tool and the API), confirmation and exit codes.
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { BusiestKeys } from "../../../src/api/management.js";
import type {
  GroupInfo,
  NamespaceInfo,
  PeekedMessage,
  SettingsDocument,
  TopicInfo,
} from "../../../src/cli/api-client.js";
import type { ReceiveResult } from "../../../src/cli/commands/messages.js";
import type { PublishReport } from "../../../src/cli/commands/publish.js";
import { runCli, startCli, type CliRun } from "../../helpers/cli.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { makeNamespace } from "../../../src/queue/namespace.js";

// Each command is a process started through tsx: a second or more on a busy machine.
vi.setConfig({ testTimeout: 180_000 });

const fx = useGateways(1, { env: { VQS_OPERATOR_TEAMS: "ops" } });
let token: string;
let opsToken: string;
const project = uniqueName("prj");

beforeAll(async () => {
  token = await fx.issuer.token({ project_id: project });
  opsToken = await fx.issuer.token({ owner_id: "ops", sub: "olga" });
});

const env = (t = token) => ({ VQS_URL: fx.gateways[0]!.url, VQS_TOKEN: t });
const vqs = (args: string[], input?: string | Uint8Array): Promise<CliRun> =>
  runCli(args, { env: env(), ...(input !== undefined ? { input } : {}) });

async function json<T>(args: string[], input?: string | Uint8Array): Promise<T> {
  const r = await vqs([...args, "--json"], input);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const topicInfo = (t: string) => json<TopicInfo>(["topic", t]);
const groupsOf = (t: string) => json<GroupInfo[]>(["groups", t]);

/** Not UTF-8: previewed as base64 by the API, as hex bytes by the tool. */
const BINARY = Buffer.from([0xff, 0xfe, 0x00, 0x62, 0x69, 0x6e]);

describe("vqs publish and what topics, topic and peek show of it", () => {
  it("--count 50 publishes 50 messages; topics and topic count them", async () => {
    const topic = uniqueName("pub");
    const report = await json<PublishReport>(["publish", topic, "--data", "x", "--count", "50"]);
    expect(report.published).toBe(50);
    expect(new Set(report.messageIds).size).toBe(50);
    const listed = await json<TopicInfo[]>(["topics"]);
    expect(listed.find((t) => t.name === topic)).toMatchObject({ messages: 50, delayed: 0 });
    expect((await topicInfo(topic)).messages).toBe(50);
    const table = await vqs(["topics"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^TOPIC +MESSAGES +DELAYED/);
    expect(table.stdout).toMatch(new RegExp(`\\n${topic} +50 +0 +0 `));
    // The namespace's storage against its quotas (the defaults: 10 GiB, 1 GiB per topic).
    expect(table.stdout).toMatch(
      /\nstorage: [\d.]+ \w*B of 10(\.0)? GiB \(0%\); per topic at most 1(\.0)? GiB\n/,
    );
    // Not a terminal: no progress bar, one final line.
    const text = await vqs(["publish", topic, "--data", "y", "--count", "3"]);
    expect([text.code, text.stdout, text.stderr]).toEqual([
      0,
      `published 3 messages to ${topic}\n`,
      "",
    ]);
  });

  it("reads the payload from stdin or a file; content type, delay and key are sent", async () => {
    const topic = uniqueName("pub");
    const a = await json<{ messageId: string }>(
      ["publish", topic, "-", "--content-type", "application/json", "--key", "k1"],
      '{"id":1}\n',
    );
    // The same key: a duplicate (answered with an ID of its own), not a second message.
    const again = await json<{ messageId: string }>([
      "publish",
      topic,
      "--data",
      "other",
      "--key",
      "k1",
    ]);
    expect(again.messageId).not.toBe(a.messageId);
    const delayed = await vqs([
      "publish",
      topic,
      "--data",
      "later",
      "--delay",
      "600",
      "--ttl",
      "3600",
    ]);
    expect(delayed.stdout).toMatch(/^published {2}m/);
    const none = await vqs(["publish", topic, "--file", "/nonexistent/x"]);
    expect([none.code, none.stderr]).toEqual([3, expect.stringContaining("ENOENT") as string]);
    expect(await topicInfo(topic)).toMatchObject({ messages: 1, delayed: 1 });

    const received = await json<ReceiveResult[]>(["receive", topic, "g", "--ack"]);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ messageId: a.messageId, contentType: "application/json" });
    expect(Buffer.from(received[0]!.body, "base64").toString()).toBe('{"id":1}\n');
  });

  it("peek shows payload previews and changes no delivery count", async () => {
    const topic = uniqueName("peek");
    await vqs(["publish", topic, "--data", "hello\nworld", "--content-type", "text/plain"]);
    await vqs(["publish", topic, "-"], BINARY);
    // A group that has received the first message once (delivery 1, leased 1 s).
    const first = await json<ReceiveResult[]>(["receive", topic, "g", "--visibility", "1"]);
    expect(first[0]!.deliveryCount).toBe(1);

    const page = await json<{ messages: PeekedMessage[]; next: string | null }>(["peek", topic]);
    expect(page.messages.map((m) => [m.preview, m.previewEncoding, m.size])).toEqual([
      ["hello\nworld", "utf8", 11],
      [BINARY.toString("base64"), "base64", 6],
    ]);
    const table = await vqs(["peek", topic]);
    expect(table.stdout).toMatch(/^ID +PUBLISHED +TYPE +SIZE +PAYLOAD\n/);
    expect(table.stdout).toMatch(/ text\/plain +11 B +hello\\nworld\n/);
    expect(table.stdout).toContain("hex ff fe 00 62 69 6e");
    const full = await json<{ messages: PeekedMessage[] }>([
      "peek",
      topic,
      "--full",
      "--limit",
      "1",
    ]);
    expect(Buffer.from(full.messages[0]!.payload!, "base64").toString()).toBe("hello\nworld");

    // Peeking leased nothing: the group's figures are as before, the second message's first
    // delivery is delivery 1, and the first comes back as delivery 2.
    const [g] = await groupsOf(topic);
    expect(g).toMatchObject({ name: "g", deliveries: 1, inFlight: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    const next = await json<ReceiveResult[]>(["receive", topic, "g", "--max", "10", "--ack"]);
    expect(next.map((m) => m.deliveryCount).sort()).toEqual([1, 2]);
  });
});

describe("destructive commands", () => {
  it("off a terminal without --yes: exit 4 and nothing changes; with --yes purge empties", async () => {
    const topic = uniqueName("purge");
    await vqs(["publish", topic, "--data", "x", "--count", "5"]);
    for (const args of [
      ["purge", topic],
      ["delete", topic],
      ["seek", topic, "g", "latest"],
    ]) {
      const r = await vqs(args);
      expect([args, r.code]).toEqual([args, 4]);
      expect(r.stderr).toContain("pass --yes");
    }
    expect((await topicInfo(topic)).messages).toBe(5);

    expect(await json(["purge", topic, "--yes"])).toEqual({ purged: 5 });
    expect((await topicInfo(topic)).messages).toBe(0);
    const text = await vqs(["purge", topic, "--yes"]);
    expect(text.stdout).toBe(`purged ${topic}: 0 messages removed\n`);
  });

  it("seek earliest makes a group receive again what it acknowledged", async () => {
    const topic = uniqueName("seek");
    await vqs(["publish", topic, "--data", "m", "--count", "3"]);
    expect(
      await json<ReceiveResult[]>(["receive", topic, "g", "--max", "10", "--ack"]),
    ).toHaveLength(3);
    expect(await json<ReceiveResult[]>(["receive", topic, "g"])).toEqual([]);
    const r = await vqs(["seek", topic, "g", "earliest", "--yes"]);
    expect([r.code, r.stdout]).toEqual([0, `group g of ${topic} now reads from earliest\n`]);
    expect(
      await json<ReceiveResult[]>(["receive", topic, "g", "--max", "10", "--ack"]),
    ).toHaveLength(3);
    // latest: nothing of what is there now.
    await vqs(["publish", topic, "--data", "old"]);
    expect(await json(["seek", topic, "g", "latest", "--yes"])).toEqual({
      topic,
      consumerGroup: "g",
      to: "latest",
    });
    expect(await json<ReceiveResult[]>(["receive", topic, "g"])).toEqual([]);
  });

  it("delete removes a group, or the topic (404 after)", async () => {
    const topic = uniqueName("del");
    await vqs(["publish", topic, "--data", "x"]);
    await json(["receive", topic, "a"]);
    await json(["receive", topic, "b"]);
    expect((await groupsOf(topic)).map((g) => g.name).sort()).toEqual(["a", "b"]);
    const g = await vqs(["delete", topic, "a", "--yes"]);
    expect([g.code, g.stdout]).toEqual([0, `deleted group a of ${topic}\n`]);
    expect((await groupsOf(topic)).map((x) => x.name)).toEqual(["b"]);

    expect(await json(["delete", topic, "--yes"])).toEqual({ deleted: "topic", topic });
    const after = await vqs(["topic", topic]);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain("topic_not_found (HTTP 404)");
    const afterJson = await vqs(["topic", topic, "--json"]);
    expect(JSON.parse(afterJson.stderr)).toMatchObject({
      error: { status: 404, code: "topic_not_found" },
    });
    expect((await vqs(["delete", topic, "--yes"])).code).toBe(1);
  });
});

describe("vqs settings", () => {
  it("put, get, list and delete round trip", async () => {
    const topic = uniqueName("set");
    const doc = {
      deadLetter: { topic: `${topic}-dead`, maxDeliveries: 4 },
      retry: { afterSeconds: 30 },
    };
    const stored = await json<SettingsDocument>([
      "settings",
      "put",
      topic,
      "g",
      "--data",
      JSON.stringify(doc),
    ]);
    expect(stored).toMatchObject({ topic, consumerGroup: "g", ...doc });
    const got = await json<SettingsDocument>(["settings", "get", topic, "g"]);
    expect(got).toMatchObject({ deadLetter: doc.deadLetter, retry: { afterSeconds: 30 } });
    // What get printed goes back in unchanged through stdin.
    const changed = JSON.stringify({ ...got, retry: { ...got.retry, afterSeconds: 45 } });
    const put = await vqs(["settings", "put", topic, "g", "-"], changed);
    expect([put.code, put.stdout]).toEqual([0, `stored settings of ${topic} / g\n`]);
    const listed = await json<SettingsDocument[]>(["settings", "list"]);
    expect(listed.find((d) => d.topic === topic)).toMatchObject({ retry: { afterSeconds: 45 } });
    const table = await vqs(["settings", "list"]);
    expect(table.stdout).toMatch(new RegExp(`\\n${topic} +g +- +45s +${topic}-dead after 4`));

    const bad = await vqs([
      "settings",
      "put",
      topic,
      "g",
      "--data",
      '{"retry":{"afterSeconds":-1}}',
    ]);
    expect([bad.code, bad.stderr]).toEqual([
      1,
      expect.stringContaining("invalid_settings") as string,
    ]);
    expect((await vqs(["settings", "delete", topic, "g"])).code).toBe(4);
    expect((await vqs(["settings", "delete", topic, "g", "--yes"])).code).toBe(0);
    const gone = await vqs(["settings", "get", topic, "g"]);
    expect([gone.code, gone.stderr]).toEqual([
      1,
      expect.stringContaining("settings_not_found") as string,
    ]);
    expect(
      (await json<SettingsDocument[]>(["settings", "list"])).find((d) => d.topic === topic),
    ).toBeUndefined();
  });
});

describe("flow control: vqs settings and vqs keys", () => {
  it("settings put, get and list carry flowControl; a bad one is the API's invalid_settings", async () => {
    const topic = uniqueName("flow");
    const stored = await json<SettingsDocument>([
      "settings",
      "put",
      topic,
      "g",
      "--data",
      JSON.stringify({ flowControl: { key: "Tenant", rate: { limit: 10, periodSeconds: 60 } } }),
    ]);
    const flowControl = {
      key: "tenant",
      concurrency: null,
      rate: { limit: 10, periodSeconds: 60, burst: 10 },
      ordered: false,
    };
    expect(stored.flowControl).toEqual(flowControl);
    const got = await json<SettingsDocument>(["settings", "get", topic, "g"]);
    expect(got.flowControl).toEqual(flowControl);
    // What get printed, one limit changed, goes back through stdin.
    const changed = JSON.stringify({ ...got, flowControl: { ...flowControl, concurrency: 3 } });
    const put = await vqs(["settings", "put", topic, "g", "-"], changed);
    expect(put.code, put.stderr).toBe(0);
    const listed = await json<SettingsDocument[]>(["settings", "list"]);
    expect(listed.find((d) => d.topic === topic)?.flowControl).toEqual({
      ...flowControl,
      concurrency: 3,
    });
    const table = await vqs(["settings", "list"]);
    expect(table.stdout).toMatch(/ +DEAD LETTERS +FLOW CONTROL\n/);
    expect(table.stdout).toMatch(
      new RegExp(`\\n${topic} +g +- +60s +- +tenant: concurrency 3, rate 10/60s \\(burst 10\\)\\n`),
    );

    const bad = await vqs([
      "settings",
      "put",
      topic,
      "g",
      "--data",
      '{"flowControl":{"key":"tenant"}}',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("invalid_settings (HTTP 400): flowControl needs a limit");
  });

  it("keys lists a group's busiest keys, in flight and waiting; none without flowControl", async () => {
    const topic = uniqueName("keys");
    const q = api(fx.gateways[0]!.url, token);
    const handles: string[] = [];
    try {
      const missing = await vqs(["keys", topic, "workers"]);
      expect([missing.code, missing.stdout]).toEqual([1, ""]);
      expect(missing.stderr).toContain(
        `group_not_found (HTTP 404): topic ${topic} has no consumer group workers`,
      );
      const missingJson = await vqs(["keys", topic, "workers", "--json"]);
      expect(missingJson.code).toBe(1);
      expect(JSON.parse(missingJson.stderr)).toMatchObject({
        error: { status: 404, code: "group_not_found" },
      });

      await json([
        "settings",
        "put",
        topic,
        "workers",
        "--data",
        '{"flowControl":{"key":"tenant","concurrency":1}}',
      ]);
      const ns = makeNamespace("team_a", project, "production", null);
      await expect
        .poll(() => fx.gateways[0]!.gateway.settings.effective(ns, topic, "workers")?.flowControl)
        .toMatchObject({ key: "tenant", concurrency: 1 });
      for (const [body, tenant] of [
        ["a1", "acme"],
        ["a2", "acme"],
        ["a3", "acme"],
        ["b1", "beta"],
      ]) {
        expect(
          (await q.publish(topic, body!, { "content-type": "text/plain", tenant: tenant! })).status,
        ).toBe(201);
      }
      // One of each key is handed out (concurrency 1); acme's other two wait.
      const got = await json<ReceiveResult[]>(["receive", topic, "workers", "--max", "10"]);
      handles.push(...got.map((m) => m.receiptHandle));
      expect(got.map((m) => Buffer.from(m.body, "base64").toString()).sort()).toEqual(["a1", "b1"]);

      const busiest = await json<BusiestKeys>(["keys", topic, "workers"]);
      expect(busiest.flowControl).toEqual({
        key: "tenant",
        concurrency: 1,
        rate: null,
        ordered: false,
      });
      expect(busiest.keys.map((k) => [k.key, k.inFlight, k.waiting])).toEqual([
        ["acme", 1, 2],
        ["beta", 1, 0],
      ]);
      const one = await json<BusiestKeys>(["keys", topic, "workers", "--limit", "1"]);
      expect(one.keys.map((k) => k.key)).toEqual(["acme"]);
      const table = await vqs(["keys", topic, "workers"]);
      expect([table.code, table.stderr]).toEqual([0, ""]);
      expect(table.stdout).toBe(
        [
          "flow control: tenant: concurrency 1",
          "KEY   IN FLIGHT  WAITING",
          "acme  1          2",
          "beta  1          0",
          "",
        ].join("\n"),
      );

      // Past the waiting sample (the oldest 1,000): counted up to it, and a note says so.
      for (let i = 0; i < 10; i++) {
        const bodies = Array.from({ length: 100 }, (_, j) => `g${i * 100 + j}`);
        expect((await q.publishBatch(topic, bodies, { tenant: "gamma" })).status).toBe(200);
      }
      const sampled = await vqs(["keys", topic, "workers"]);
      expect(sampled.code, sampled.stderr).toBe(0);
      expect(sampled.stderr).toBe(
        "waiting: counted among 1000 messages from stream position 1; more wait past them\n",
      );
      const partial = await json<BusiestKeys>(["keys", topic, "workers"]);
      expect(partial.keys.map((k) => [k.key, k.inFlight, k.waiting])).toEqual([
        ["gamma", 0, 996],
        ["acme", 1, 2],
        ["beta", 1, 0],
      ]);
      expect(partial.waitingSample).toEqual({ messages: 1000, fromSequence: 1, complete: false });

      // A group without flowControl: no key is limited, exit 0.
      await json(["receive", topic, "plain", "--ack"]);
      const plain = await vqs(["keys", topic, "plain"]);
      expect([plain.code, plain.stdout]).toEqual([
        0,
        `group plain of ${topic} has no flowControl: no key is limited\n`,
      ]);
      expect((await json<BusiestKeys>(["keys", topic, "plain"])).flowControl).toBeNull();
    } finally {
      for (const h of handles) await q.ack(topic, "workers", h);
    }
  });
});

describe("vqs tail's own group", () => {
  it("is deleted when the tail ends, by Ctrl-C or by --count", async () => {
    const topic = uniqueName("tail");
    await vqs(["publish", topic, "--data", "before"]);
    const tail = startCli(["tail", topic, "--json"], { env: env() });
    await tail.until((o) => o.stderr.includes("tailing"));
    const group = /as group (vqs-tail-[0-9a-f]{8})/.exec(tail.output().stderr)![1]!;
    expect((await groupsOf(topic)).map((g) => g.name)).toContain(group);
    await vqs(["publish", topic, "--data", "new"]);
    await tail.until((o) => o.stdout.includes('"messageId"'));
    tail.child.kill("SIGINT");
    const r = await tail.done;
    expect(r.code, r.stderr).toBe(0);
    expect((await groupsOf(topic)).map((g) => g.name)).not.toContain(group);

    const counted = await vqs(["tail", topic, "--from-start", "--count", "1"]);
    expect(counted.code, counted.stderr).toBe(0);
    expect((await groupsOf(topic)).filter((g) => g.name.startsWith("vqs-tail-"))).toEqual([]);
  });
});

describe("operators", () => {
  it("namespaces lists them and --namespace acts in one; tenants get operator_only", async () => {
    const topic = uniqueName("ns");
    await vqs(["publish", topic, "--data", "x", "--count", "2"]);
    const ops = (args: string[]) => runCli(args, { env: env(opsToken) });
    const listed = await ops(["namespaces", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const mine = (JSON.parse(listed.stdout) as NamespaceInfo[]).find((n) => n.project === project);
    expect(mine).toBeDefined();
    const table = await ops(["namespaces"]);
    expect(table.stdout).toContain(mine!.label);

    const inMine = await ops(["--namespace", mine!.label, "topic", topic, "--json"]);
    expect(inMine.code, inMine.stderr).toBe(0);
    expect(JSON.parse(inMine.stdout)).toMatchObject({ name: topic, messages: 2 });
    const purged = await runCli(["purge", topic, "--yes", "--json"], {
      env: { ...env(opsToken), VQS_NAMESPACE: mine!.label },
    });
    expect(JSON.parse(purged.stdout)).toEqual({ purged: 2 });
    expect((await topicInfo(topic)).messages).toBe(0);
    // Without it, the operator's own namespace: no such topic.
    expect((await ops(["topic", topic])).code).toBe(1);

    const tenant = await vqs(["namespaces"]);
    expect([tenant.code, tenant.stderr]).toEqual([
      1,
      expect.stringContaining("operator_only") as string,
    ]);
    const asOther = await vqs(["--namespace", mine!.label, "topics"]);
    expect([asOther.code, asOther.stderr]).toEqual([
      1,
      expect.stringContaining("operator_only") as string,
    ]);
  });
});

// `vqs topics`, `vqs topic`, `vqs groups`, `vqs keys`, `vqs namespaces`: what the management API
// tells of a namespace's topics, consumer groups and their flow-control keys (docs/api.md,
// "Management API"), as tables or --json.
import type { Command } from "commander";
import type {
  BusiestKeys,
  BusyKey,
  GroupInfo,
  NamespaceStorage,
  TopicInfo,
} from "../../api-client.js";
import type { Context } from "../../context.js";
import { ApiError } from "../../errors.js";
import { checkName, LIMITS, parseInteger } from "../../options.js";
import { formatBytes, formatDuration, formatFlowControl } from "../../output.js";
import { examples, type ContextOf } from "../help.js";

export function inspectCommands(program: Command, contextOf: ContextOf): void {
  const topics = program
    .command("topics")
    .description("list the namespace's topics: messages, delayed, storage, age, groups")
    .action(async (_o: unknown, c: Command) => runTopics(contextOf(c)));
  examples(topics, ["vqs topics", "vqs topics --json | jq -r '.[].name'"]);

  const topic = program
    .command("topic")
    .description("one topic's figures and the consumer settings that apply to it")
    .argument("<topic>", "the topic")
    .action(async (t: string, _o: unknown, c: Command) => runTopic(contextOf(c), t));
  examples(topic, ["vqs topic orders"]);

  const groups = program
    .command("groups")
    .description(
      "a topic's consumer groups: backlog, in flight, oldest unacknowledged, deliveries, " +
        "dead-lettered, push health",
    )
    .argument("<topic>", "the topic")
    .action(async (t: string, _o: unknown, c: Command) => runGroups(contextOf(c), t));
  examples(groups, ["vqs groups orders", "vqs groups orders --json"]);

  const { min, max, default: byDefault } = LIMITS.busiestKeysLimit;
  const keys = program
    .command("keys")
    .description(
      "a consumer group's busiest flow-control keys, region-wide: messages of each in flight " +
        "and waiting (a sampled figure), busiest first",
    )
    .argument("<topic>", "the topic")
    .argument("<group>", "the consumer group")
    .option("--limit <n>", `how many keys, ${min}..${max}`, String(byDefault))
    .action(async (t: string, g: string, o: { limit: string }, c: Command) =>
      runKeys(contextOf(c), t, g, o.limit),
    );
  examples(keys, ["vqs keys orders workers", "vqs keys orders workers --limit 5 --json"]);

  const namespaces = program
    .command("namespaces")
    .description(
      "operators: list every namespace with topics (act in one with --namespace <label>)",
    )
    .action(async (_o: unknown, c: Command) => runNamespaces(contextOf(c)));
  examples(namespaces, ["vqs namespaces", "vqs --namespace team_a/shop/production topics"]);
}

const time = (t: string | null) => t ?? "-";

/** "1.2 MiB of 10 GiB (12%)", or the bytes alone without a quota. */
function quotaUse(s: NamespaceStorage): string {
  if (s.limitBytes === 0) return formatBytes(s.usedBytes);
  const pct = Math.floor((100 * s.usedBytes) / s.limitBytes);
  return `${formatBytes(s.usedBytes)} of ${formatBytes(s.limitBytes)} (${pct}%)`;
}

/** The large bodies' part of the bytes used ("-" for none, or a gateway that does not say). */
function largeBodies(s: NamespaceStorage): string {
  return s.largeBodyBytes ? formatBytes(s.largeBodyBytes) : "-";
}

function storageLine(s: NamespaceStorage): string {
  const topic = s.topicLimitBytes === 0 ? "none" : formatBytes(s.topicLimitBytes);
  const large = s.largeBodyBytes ? ` (large bodies ${formatBytes(s.largeBodyBytes)})` : "";
  return `storage: ${quotaUse(s)}${large}; per topic at most ${topic}`;
}

async function runTopics(ctx: Context): Promise<void> {
  const [topics, storage] = await Promise.all([ctx.api().listTopics(), ctx.api().storage()]);
  if (ctx.out.json) return ctx.out.printJson(topics);
  if (topics.length === 0) return ctx.out.print(`no topics\n${storageLine(storage)}`);
  ctx.out.printTable<TopicInfo>(
    [
      { header: "TOPIC", value: (t) => t.name, colour: () => "cyan" },
      { header: "MESSAGES", value: (t) => String(t.messages) },
      { header: "DELAYED", value: (t) => String(t.delayed) },
      { header: "GROUPS", value: (t) => String(t.consumerGroups) },
      { header: "SIZE", value: (t) => formatBytes(t.bytes) },
      { header: "OLDEST", value: (t) => time(t.oldestMessageAt) },
      { header: "NEWEST", value: (t) => time(t.newestMessageAt) },
    ],
    topics,
  );
  ctx.out.print(storageLine(storage));
}

async function runTopic(ctx: Context, name: string): Promise<void> {
  checkName("topic", name);
  const t = await ctx.api().topic(name);
  if (ctx.out.json) return ctx.out.printJson(t);
  const rows: [string, string][] = [
    ["topic", t.name],
    ["messages", String(t.messages)],
    ["delayed", String(t.delayed)],
    ["size", formatBytes(t.bytes)],
    ["oldest message", time(t.oldestMessageAt)],
    ["newest message", time(t.newestMessageAt)],
    ["consumer groups", String(t.consumerGroups)],
  ];
  ctx.out.printTable<[string, string]>(
    [
      { header: "FIELD", value: (r) => r[0] },
      { header: "VALUE", value: (r) => r[1] },
    ],
    rows,
  );
  if (t.settings.length > 0) {
    ctx.out.print("");
    ctx.out.printTable(
      [
        { header: "SETTINGS OF", value: (s) => s.topic },
        { header: "GROUP", value: (s) => s.consumerGroup },
        { header: "PUSH", value: (s) => (s.push ? "yes" : "no") },
        { header: "DEAD LETTERS TO", value: (s) => s.deadLetterTopic ?? "-" },
      ],
      t.settings,
    );
  }
}

async function runGroups(ctx: Context, topic: string): Promise<void> {
  checkName("topic", topic);
  const groups = await ctx.api().groups(topic);
  if (ctx.out.json) return ctx.out.printJson(groups);
  if (groups.length === 0) return ctx.out.print(`no consumer groups on ${topic}`);
  ctx.out.printTable<GroupInfo>(
    [
      { header: "GROUP", value: (g) => g.name, colour: () => "cyan" },
      { header: "BACKLOG", value: (g) => String(g.backlog) },
      { header: "IN FLIGHT", value: (g) => String(g.inFlight) },
      {
        header: "OLDEST UNACKED",
        value: (g) =>
          g.oldestUnacknowledgedAgeSeconds === null
            ? "-"
            : formatDuration(g.oldestUnacknowledgedAgeSeconds),
      },
      { header: "DELIVERIES", value: (g) => String(g.deliveries) },
      { header: "REDELIVERED", value: (g) => String(g.redelivered) },
      {
        header: "DEAD-LETTERED",
        value: (g) => String(g.deadLettered),
        colour: (g) => (g.deadLettered > 0 ? "yellow" : undefined),
      },
      {
        header: "PUSH",
        value: pushState,
        colour: (g) => (pushState(g) === "failing" ? "red" : undefined),
      },
    ],
    groups,
  );
}

/** `-` (polled), `ok`, `failing` (the last attempt failed) or `push` (none yet). */
function pushState(g: GroupInfo): string {
  if (!g.settings?.push) return "-";
  const h = g.pushHealth;
  if (!h || (h.lastSuccessAt === null && h.lastFailureAt === null)) return "push";
  if (h.lastFailureAt !== null && (h.lastSuccessAt === null || h.lastFailureAt > h.lastSuccessAt)) {
    return "failing";
  }
  return "ok";
}

async function runKeys(ctx: Context, topic: string, group: string, limitText: string) {
  checkName("topic", topic);
  checkName("group", group);
  const { min, max } = LIMITS.busiestKeysLimit;
  const limit = parseInteger("--limit", limitText, min, max);
  let busiest: BusiestKeys;
  try {
    busiest = await ctx.api().keys(topic, group, limit);
  } catch (err) {
    if (err instanceof ApiError && err.code === "group_not_found") {
      throw new ApiError(err.status, err.code, `topic ${topic} has no consumer group ${group}`);
    }
    throw err;
  }
  if (ctx.out.json) return ctx.out.printJson(busiest);
  const out = ctx.out;
  if (busiest.flowControl === null) {
    return out.print(`group ${group} of ${topic} has no flowControl: no key is limited`);
  }
  out.print(`flow control: ${formatFlowControl(busiest.flowControl)}`);
  if (busiest.keys.length === 0) out.print("no key has messages in flight or waiting");
  else {
    out.printTable<BusyKey>(
      [
        { header: "KEY", value: keyText, colour: (k) => (k.key === null ? "dim" : "cyan") },
        { header: "IN FLIGHT", value: (k) => String(k.inFlight) },
        { header: "WAITING", value: (k) => String(k.waiting) },
      ],
      busiest.keys,
    );
  }
  // The figures' bounds, for the human: what was not read is not counted.
  const { keyRecords: r, waitingSample: w } = busiest;
  if (!r.complete) out.note(`in flight: from the group's first ${r.read} key records only`);
  if (!w.complete) {
    out.note(
      `waiting: counted among ${w.messages} messages from stream position ${w.fromSequence}; ` +
        "more wait past them",
    );
  }
}

/** The key's value (`…` when cut), or its hash when no message of it could be read. */
function keyText(k: BusyKey): string {
  if (k.key === null) return `(hash ${k.keyHash})`;
  return k.keyTruncated ? `${k.key}…` : k.key;
}

async function runNamespaces(ctx: Context): Promise<void> {
  const namespaces = await ctx.api().namespaces();
  if (ctx.out.json) return ctx.out.printJson(namespaces);
  if (namespaces.length === 0) return ctx.out.print("no namespaces");
  ctx.out.printTable(
    [
      { header: "NAMESPACE", value: (n) => n.label, colour: () => "cyan" },
      { header: "TOPICS", value: (n) => String(n.topics) },
      { header: "STORAGE", value: (n) => quotaUse(n.storage) },
      { header: "LARGE BODIES", value: (n) => largeBodies(n.storage) },
    ],
    namespaces,
  );
}

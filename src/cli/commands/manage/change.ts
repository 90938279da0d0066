// `vqs purge`, `vqs delete` (a topic, or one of its groups) and `vqs seek`: the destructive
// calls of the management API. Each asks for confirmation on a terminal and needs --yes
// elsewhere (exit 4 without it, nothing sent); the gateway logs each as an audit event.
import type { Command } from "commander";
import type { Context } from "../../context.js";
import { UsageError } from "../../errors.js";
import { checkName } from "../../options.js";
import { confirm } from "../../terminal/confirm.js";
import { examples, type ContextOf } from "../help.js";

interface YesFlag {
  readonly yes?: boolean;
}

const YES = ["-y, --yes", "do it without asking (needed when not on a terminal)"] as const;

export function changeCommands(program: Command, contextOf: ContextOf): void {
  const purge = program
    .command("purge")
    .description(
      "remove every message of a topic (delayed ones and idempotency keys too); its groups " +
        "and settings stay",
    )
    .argument("<topic>", "the topic")
    .option(...YES)
    .action(async (t: string, o: YesFlag, c: Command) => runPurge(contextOf(c), t, o));
  examples(purge, ["vqs purge orders", "vqs purge orders --yes --json"]);

  const del = program
    .command("delete")
    .description(
      "delete a topic (its messages, groups, settings and idempotency keys), or with a group " +
        "only that consumer group (its position and leases; its settings stay)",
    )
    .argument("<topic>", "the topic")
    .argument("[group]", "only this consumer group of the topic")
    .option(...YES)
    .action(async (t: string, g: string | undefined, o: YesFlag, c: Command) =>
      runDelete(contextOf(c), t, g, o),
    );
  examples(del, ["vqs delete orders", "vqs delete orders billing --yes"]);

  const seek = program
    .command("seek")
    .description(
      "move a consumer group: it next receives from the oldest retained message (earliest), " +
        "only messages published from now on (latest), or from a time on; its outstanding " +
        "receipt handles stop working",
    )
    .argument("<topic>", "the topic")
    .argument("<group>", "the consumer group")
    .argument("<to>", "earliest, latest, or an ISO 8601 time")
    .option(...YES)
    .action(async (t: string, g: string, to: string, o: YesFlag, c: Command) =>
      runSeek(contextOf(c), t, g, to, o),
    );
  examples(seek, [
    "vqs seek orders billing earliest",
    "vqs seek orders billing 2026-11-23T04:00:00Z --yes",
  ]);
}

/** `in <namespace>` when acting in another one (--namespace), for the question. */
function where(ctx: Context): string {
  const ns = ctx.namespace;
  return ns === null ? "" : ` in ${ns}`;
}

async function runPurge(ctx: Context, topic: string, o: YesFlag): Promise<void> {
  checkName("topic", topic);
  const api = ctx.api();
  await confirm(ctx, `remove every message of ${topic}${where(ctx)}?`, o.yes === true);
  const r = await api.purge(topic);
  if (ctx.out.json) ctx.out.printJson(r);
  else ctx.out.print(`purged ${topic}: ${r.purged} message${r.purged === 1 ? "" : "s"} removed`);
}

async function runDelete(
  ctx: Context,
  topic: string,
  group: string | undefined,
  o: YesFlag,
): Promise<void> {
  checkName("topic", topic);
  if (group !== undefined) checkName("group", group);
  const api = ctx.api();
  if (group === undefined) {
    await confirm(
      ctx,
      `delete topic ${topic}${where(ctx)} with its messages, groups and settings?`,
      o.yes === true,
    );
    await api.deleteTopic(topic);
  } else {
    await confirm(ctx, `delete consumer group ${group} of ${topic}${where(ctx)}?`, o.yes === true);
    await api.deleteGroup(topic, group);
  }
  const report = {
    deleted: group === undefined ? "topic" : "group",
    topic,
    ...(group ? { consumerGroup: group } : {}),
  };
  if (ctx.out.json) ctx.out.printJson(report);
  else
    ctx.out.print(
      group === undefined ? `deleted topic ${topic}` : `deleted group ${group} of ${topic}`,
    );
}

async function runSeek(
  ctx: Context,
  topic: string,
  group: string,
  to: string,
  o: YesFlag,
): Promise<void> {
  checkName("topic", topic);
  checkName("group", group);
  if (to !== "earliest" && to !== "latest" && Number.isNaN(Date.parse(to))) {
    throw new UsageError(`"${to}" is not earliest, latest or an ISO 8601 time`);
  }
  const api = ctx.api();
  const what =
    to === "earliest"
      ? "to the oldest retained message"
      : to === "latest"
        ? "past every message published so far"
        : `to ${to}`;
  await confirm(ctx, `move group ${group} of ${topic}${where(ctx)} ${what}?`, o.yes === true);
  const r = await api.seek(topic, group, to);
  if (ctx.out.json) ctx.out.printJson({ topic, consumerGroup: group, ...r });
  else ctx.out.print(`group ${group} of ${topic} now reads from ${r.to}`);
}

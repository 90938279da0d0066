// `vqs settings get|put|delete|list`: consumer settings documents (docs/api.md, "Consumer
// settings") as they are stored: put takes the JSON document from --data, a file or stdin and
// replaces what is stored; the gateway checks it (400 invalid_settings, exit 1).
import type { Command } from "commander";
import { readFile } from "node:fs/promises";
import type { SettingsBody, SettingsDocument } from "../api-client.js";
import type { Context } from "../context.js";
import { ApiError, UnreachableError, UsageError } from "../errors.js";
import { checkName } from "../options.js";
import { formatFlowControl } from "../output.js";
import { confirm } from "../terminal/confirm.js";
import { examples, type ContextOf } from "./help.js";

interface PutFlags {
  readonly data?: string;
  readonly file?: string;
}

/** A pattern `prefix*` is a topic name for settings. */
function checkTopicOrPattern(topic: string): string {
  checkName("topic", topic.endsWith("*") ? topic.slice(0, -1) || "x" : topic);
  return topic;
}

export function settingsCommand(program: Command, contextOf: ContextOf): void {
  const settings = program
    .command("settings")
    .description("consumer settings documents: push, retry timing, dead letters, flow control");
  examples(settings, ["vqs settings list", "vqs settings get orders billing"]);

  const list = settings
    .command("list")
    .description("every settings document of the namespace, by topic and group")
    .action(async (_o: unknown, c: Command) => runList(contextOf(c)));
  examples(list, ["vqs settings list", "vqs settings list --json"]);

  const get = settings
    .command("get")
    .description("one document (defaults filled in); exit 1 settings_not_found when none")
    .argument("<topic>", "the topic, or a pattern prefix*")
    .argument("<group>", "the consumer group")
    .action(async (t: string, g: string, _o: unknown, c: Command) => runGet(contextOf(c), t, g));
  examples(get, ["vqs settings get orders billing", "vqs settings get 'orders_*' billing"]);

  const put = settings
    .command("put")
    .description(
      "store a document (replaces the stored one): JSON from --data, --file or stdin (`-`)",
    )
    .argument("<topic>", "the topic, or a pattern prefix*")
    .argument("<group>", "the consumer group")
    .argument("[source]", "`-`: read the document from stdin")
    .option("--data <json>", "the document")
    .option("--file <path>", "read the document from this file")
    .action(async (t: string, g: string, src: string | undefined, _o: PutFlags, c: Command) =>
      runPut(contextOf(c), t, g, src, c.opts<PutFlags>()),
    );
  examples(put, [
    `vqs settings put orders billing --data '{"deadLetter":{"topic":"orders-dead","maxDeliveries":5}}'`,
    `vqs settings put orders workers --data '{"flowControl":{"key":"tenant","concurrency":2}}'`,
    "vqs settings get orders billing --json | jq '.retry.afterSeconds = 30' | vqs settings put orders billing -",
  ]);

  const del = settings
    .command("delete")
    .description("remove a document (the group goes back to the defaults)")
    .argument("<topic>", "the topic, or a pattern prefix*")
    .argument("<group>", "the consumer group")
    .option("-y, --yes", "do it without asking (needed when not on a terminal)")
    .action(async (t: string, g: string, o: { yes?: boolean }, c: Command) =>
      runDelete(contextOf(c), t, g, o.yes === true),
    );
  examples(del, ["vqs settings delete orders billing --yes"]);
}

async function runList(ctx: Context): Promise<void> {
  const docs = await ctx.api().listSettings();
  if (ctx.out.json) return ctx.out.printJson(docs);
  if (docs.length === 0) return ctx.out.print("no settings");
  ctx.out.printTable<SettingsDocument>(
    [
      { header: "TOPIC", value: (d) => d.topic, colour: () => "cyan" },
      { header: "GROUP", value: (d) => d.consumerGroup },
      { header: "PUSH", value: (d) => d.push?.url ?? "-" },
      { header: "RETRY AFTER", value: (d) => `${d.retry.afterSeconds}s` },
      {
        header: "DEAD LETTERS",
        value: (d) =>
          d.deadLetter ? `${d.deadLetter.topic} after ${d.deadLetter.maxDeliveries}` : "-",
      },
      { header: "FLOW CONTROL", value: (d) => formatFlowControl(d.flowControl) },
    ],
    docs,
  );
}

async function runGet(ctx: Context, topic: string, group: string): Promise<void> {
  checkTopicOrPattern(topic);
  checkName("group", group);
  const doc = await ctx.api().getSettings(topic, group);
  if (doc === null) {
    throw new ApiError(404, "settings_not_found", `no settings stored for ${topic} / ${group}`);
  }
  // The document is nested JSON: it reads best as such, table or not.
  ctx.out.printJson(doc);
}

async function runPut(
  ctx: Context,
  topic: string,
  group: string,
  source: string | undefined,
  o: PutFlags,
): Promise<void> {
  checkTopicOrPattern(topic);
  checkName("group", group);
  if (source !== undefined && source !== "-") {
    throw new UsageError(
      `unexpected argument "${source}": the document comes from --data, --file or -`,
    );
  }
  const given = [o.data !== undefined, o.file !== undefined, source === "-"].filter(Boolean);
  if (given.length !== 1) throw new UsageError("give the document: --data, --file or - (stdin)");
  let text: string;
  if (o.data !== undefined) text = o.data;
  else if (o.file !== undefined) {
    try {
      text = await readFile(ctx.path(o.file), "utf8");
    } catch (err) {
      throw new UnreachableError(
        `cannot read ${o.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        "file_unreadable",
      );
    }
  } else {
    text = "";
    for await (const c of ctx.stdin) text += typeof c === "string" ? c : Buffer.from(c).toString();
  }
  let body: SettingsBody;
  try {
    body = JSON.parse(text) as SettingsBody;
  } catch (err) {
    throw new UsageError(`the document is not JSON: ${(err as Error).message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new UsageError("the document must be a JSON object");
  }
  // What `get --json` printed may be put back: the fields the API answers but does not take.
  const rest: Record<string, unknown> = { ...body };
  for (const k of ["topic", "consumerGroup", "updatedAt"]) delete rest[k];
  for (const k of ["push", "deadLetter", "flowControl"]) if (rest[k] === null) delete rest[k];
  const doc = await ctx.api().putSettings(topic, group, rest);
  if (ctx.out.json) ctx.out.printJson(doc);
  else ctx.out.print(`stored settings of ${topic} / ${group}`);
}

async function runDelete(ctx: Context, topic: string, group: string, yes: boolean) {
  checkTopicOrPattern(topic);
  checkName("group", group);
  const api = ctx.api();
  await confirm(ctx, `delete the settings of ${topic} / ${group}?`, yes);
  await api.deleteSettings(topic, group);
  if (ctx.out.json) ctx.out.printJson({ deleted: true, topic, consumerGroup: group });
  else ctx.out.print(`deleted settings of ${topic} / ${group}`);
}

// `vqs tail`: follows a topic live, like `tail -f`: each message as it arrives, one line each
// (--json: one JSON object per line), until Ctrl-C or --count. src/cli/messages/tail.ts holds
// the loop and what is acknowledged or released when.
import type { Command } from "commander";
import { randomBytes } from "node:crypto";
import type { ApiClient, SettingsDocument } from "../api-client.js";
import type { Context } from "../context.js";
import { ApiError, UsageError } from "../errors.js";
import { DEFAULT_COLUMNS, messageLine } from "../messages/show.js";
import { tail, TAIL_WAIT_SECONDS, type TailMode } from "../messages/tail.js";
import { checkName, parseInteger } from "../options.js";
import { examples, type ContextOf } from "./help.js";

/** The prefix of the tail's own groups (the alert on old messages leaves them out). */
export const TAIL_GROUP_PREFIX = "vqs-tail-";

interface TailFlags {
  readonly group?: string;
  readonly ack?: boolean;
  readonly fromStart?: boolean;
  readonly count?: string;
}

export function tailCommand(program: Command, contextOf: ContextOf): void {
  const cmd = program
    .command("tail")
    .description(
      "follow a topic live: print each message as it arrives (payload preview, content type, " +
        "IDs) until Ctrl-C or --count",
    )
    .argument("<topic>", "the topic")
    .option(
      "--group <group>",
      "receive as this consumer group: its consumers then compete with the tail for messages. " +
        "Without --ack each message is released at once after it is shown, so the group's " +
        "consumers still get it, but its delivery count goes up by one (and may reach the " +
        "group's deadLetter.maxDeliveries). Default: a group of the tail's own, " +
        `${TAIL_GROUP_PREFIX}<random>, which disturbs no consumer`,
    )
    .option("--ack", "with --group: acknowledge each message shown (the tail consumes them)")
    .option(
      "--from-start",
      "without --group: first print the messages the topic still holds, oldest first " +
        "(default: only those published after the tail started)",
    )
    .option("--count <n>", "stop after printing this many messages")
    .addHelpText(
      "after",
      [
        "",
        `The tail long-polls (${TAIL_WAIT_SECONDS} s) and prints as soon as a message arrives.`,
        "Its own group is new each run and starts at the topic's oldest unexpired message: the",
        "older ones are acknowledged in that group unshown (nobody else reads it). The tail",
        "deletes that group when it ends (Ctrl-C, --count, an error); a second Ctrl-C or a",
        "killed tail leaves it until it has been unused for 14 days.",
      ].join("\n"),
    )
    .action(async (topic: string, _o: TailFlags, c: Command) => {
      await runTail(contextOf(c), topic, c.opts<TailFlags>());
    });
  examples(cmd, [
    "vqs tail orders",
    "vqs tail orders --from-start --count 10",
    "vqs tail orders --group billing --json",
    "vqs tail orders --group billing --ack",
  ]);
}

async function runTail(ctx: Context, topic: string, o: TailFlags): Promise<void> {
  checkName("topic", topic);
  if (o.group !== undefined) checkName("group", o.group);
  if (o.ack && o.group === undefined) {
    throw new UsageError(
      "--ack needs --group: the tail's own group is acknowledged anyway (it disturbs nobody)",
    );
  }
  if (o.fromStart && o.group !== undefined) {
    throw new UsageError(
      "--from-start is for the tail's own group; a real group (--group) shows what it holds",
    );
  }
  const count =
    o.count === undefined ? null : parseInteger("--count", o.count, 1, Number.MAX_SAFE_INTEGER);
  const api = ctx.api();
  const mode: TailMode = o.group === undefined ? "own-group" : o.ack ? "ack" : "release";
  const group = o.group ?? `${TAIL_GROUP_PREFIX}${randomBytes(4).toString("hex")}`;

  const out = ctx.out;
  if (mode === "release") await warnDeadLetters(ctx, api, topic, group);
  const started = (since: number | null) => {
    const what =
      mode === "ack"
        ? ": each message shown is acknowledged"
        : mode === "release"
          ? ": each message shown is released at once, its delivery count one higher"
          : since === null
            ? ", every message it still holds, then new ones"
            : `, messages published since ${new Date(since).toISOString()}`;
    out.note(`tailing ${topic} as group ${group}${what} (Ctrl-C to stop)`);
  };

  const signal = ctx.interrupts();
  const columns = out.columns(DEFAULT_COLUMNS);
  let summary;
  try {
    summary = await tail(
      api,
      { topic, group, mode, fromStart: o.fromStart === true, count, signal },
      {
        message: (m) => {
          if (out.json) out.printJsonLine(m);
          else out.print(messageLine(m, { columns, paint: out.paint }));
        },
        started,
        note: (t) => out.note(t),
        warn: (t) => out.warn(t),
      },
    );
  } finally {
    if (mode === "own-group") await removeOwnGroup(ctx, api, topic, group);
  }
  if (summary.interrupted) {
    out.note(`stopped: ${summary.shown} message${summary.shown === 1 ? "" : "s"} shown`);
  }
}

/**
 * The tail's own group is nobody else's: removed when the tail ends (Ctrl-C, --count, an
 * error), so it counts towards no limit and no alert. Not there (the tail never received): fine.
 */
async function removeOwnGroup(ctx: Context, api: ApiClient, topic: string, group: string) {
  try {
    await api.deleteGroup(topic, group);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return;
    const why = err instanceof Error ? err.message : String(err);
    ctx.out.warn(
      `could not remove the tail's group ${group} (${why}); remove it with: vqs delete ${topic} ${group} --yes`,
    );
  }
}

/** Releasing counts a delivery: say so when the group's settings dead-letter after a few. */
async function warnDeadLetters(ctx: Context, api: ApiClient, topic: string, group: string) {
  let docs: SettingsDocument[];
  try {
    docs = await api.listSettings();
  } catch {
    return; // only a warning: the tail itself says what is wrong if it matters
  }
  const dl = applicableSettings(docs, topic, group)?.deadLetter;
  if (dl) {
    ctx.out.warn(
      `group ${group} moves a message to ${dl.topic} after ${dl.maxDeliveries} deliveries; ` +
        "each one the tail shows and releases counts as one (--ack consumes them instead)",
    );
  }
}

/** The document that applies (docs/api.md, "Consumer settings"): the topic's, else the longest pattern's. */
export function applicableSettings(
  docs: readonly SettingsDocument[],
  topic: string,
  group: string,
): SettingsDocument | null {
  let best: SettingsDocument | null = null;
  for (const d of docs) {
    if (d.consumerGroup !== group) continue;
    if (d.topic === topic) return d;
    if (!d.topic.endsWith("*")) continue;
    const prefix = d.topic.slice(0, -1);
    if (topic.startsWith(prefix) && (best === null || prefix.length >= best.topic.length - 1)) {
      best = d;
    }
  }
  return best;
}

// `vqs receive` and `vqs ack`: receive messages of a consumer group as a consumer would (each
// shown with its fields and a payload preview, or its body written to a file with --out or
// --output-dir), and acknowledge them, at once (--ack) or later by receipt handle.
import type { Command } from "commander";
import type { ReceivedMessage } from "../api-client.js";
import type { Context } from "../context.js";
import { entryFailure, PartialFailure, UsageError, type EntryError } from "../errors.js";
import { receiveToFiles } from "../messages/receive-files.js";
import { DEFAULT_COLUMNS, messageBlock } from "../messages/show.js";
import { checkName, LIMITS, parseInteger } from "../options.js";
import { examples, type ContextOf } from "./help.js";

interface ReceiveOptions {
  readonly max: string;
  readonly visibility: string;
  readonly wait: string;
  readonly ack?: boolean;
  readonly out?: string;
  readonly outputDir?: string;
}

/** One message of `receive --json`: the API's fields, and what --ack did. */
export type ReceiveResult = ReceivedMessage & {
  readonly acknowledged?: boolean;
  readonly error?: EntryError;
};

export interface AckResult {
  readonly receiptHandle: string;
  readonly acknowledged: boolean;
  readonly error?: EntryError;
}

export function messagesCommands(program: Command, contextOf: ContextOf): void {
  const L = LIMITS;
  const receive = program
    .command("receive")
    .description(
      "receive messages of a consumer group, as a consumer does: each is leased to you " +
        "(and its delivery count goes up) until acknowledged or its visibility timeout ends",
    )
    .argument("<topic>", "the topic")
    .argument("<group>", "the consumer group")
    .option(
      "--max <n>",
      `most messages to receive, ${L.maxMessages.min}..${L.maxMessages.max}`,
      String(L.maxMessages.default),
    )
    .option(
      "--visibility <seconds>",
      `how long they stay leased to you, ${L.visibilityTimeoutSeconds.min}..${L.visibilityTimeoutSeconds.max}`,
      String(L.visibilityTimeoutSeconds.default),
    )
    .option(
      "--wait <seconds>",
      `when there is none, wait this long for one (long polling), ${L.waitSeconds.min}..${L.waitSeconds.max}`,
      "0",
    )
    .option("--ack", "acknowledge each message once printed (else: its receipt handle is shown)")
    .option(
      "--out <file>",
      "write the message's body to this file as it arrives (any size; with --max 1)",
    )
    .option(
      "--output-dir <dir>",
      "write each message's body to <dir>/<message ID> as it arrives (any size)",
    )
    .action(async (topic: string, group: string, _o: ReceiveOptions, cmd: Command) => {
      await runReceive(contextOf(cmd), topic, group, cmd.opts<ReceiveOptions>());
    });
  examples(receive, [
    "vqs receive orders billing",
    "vqs receive orders billing --max 10 --wait 20 --ack",
    "vqs receive orders-dead billing --json | jq -r '.[].body' | base64 -d",
    "vqs receive uploads archiver --out video.bin --ack",
    "vqs receive uploads archiver --max 10 --output-dir ./bodies",
  ]);

  const ack = program
    .command("ack")
    .description("acknowledge received messages by receipt handle (as `vqs receive` shows them)")
    .argument("<topic>", "the topic")
    .argument("<group>", "the consumer group")
    .argument("<receipt-handle...>", "one or more receipt handles")
    .action(async (topic: string, group: string, handles: string[], _o: unknown, cmd: Command) => {
      await runAck(contextOf(cmd), topic, group, handles);
    });
  examples(ack, ["vqs ack orders billing AQAAAAAAAAAB..."]);
}

async function runReceive(ctx: Context, topic: string, group: string, o: ReceiveOptions) {
  checkName("topic", topic);
  checkName("group", group);
  const L = LIMITS;
  const maxMessages = parseInteger("--max", o.max, L.maxMessages.min, L.maxMessages.max);
  const visibilityTimeoutSeconds = parseInteger(
    "--visibility",
    o.visibility,
    L.visibilityTimeoutSeconds.min,
    L.visibilityTimeoutSeconds.max,
  );
  const waitSeconds = parseInteger("--wait", o.wait, L.waitSeconds.min, L.waitSeconds.max);
  if (o.out !== undefined && o.outputDir !== undefined) {
    throw new UsageError("give one of --out and --output-dir");
  }
  if (o.out !== undefined && maxMessages !== 1) {
    throw new UsageError("--out writes one message's body: use --max 1, or --output-dir");
  }
  const api = ctx.api();
  if (o.out !== undefined || o.outputDir !== undefined) {
    // Bodies of any size, streamed to files (NDJSON would carry them whole, in base64).
    return receiveToFiles(ctx, api, topic, group, {
      maxMessages,
      visibilityTimeoutSeconds,
      waitSeconds,
      ack: o.ack === true,
      target: o.out !== undefined ? { file: o.out } : { dir: o.outputDir! },
    });
  }
  const { messages } = await api.receive(topic, group, {
    maxMessages,
    visibilityTimeoutSeconds,
    waitSeconds,
  });

  const results: ReceiveResult[] = [];
  for (const m of messages) {
    if (!o.ack) {
      results.push(m);
      continue;
    }
    try {
      await api.acknowledge(topic, group, m.receiptHandle);
      results.push({ ...m, acknowledged: true });
    } catch (err) {
      results.push({ ...m, acknowledged: false, error: entryFailure(err) });
    }
  }
  const failed = results.filter((r) => r.error).length;

  if (ctx.out.json) ctx.out.printJson(results);
  else printMessages(ctx, topic, group, results, o.ack === true, visibilityTimeoutSeconds);
  if (failed > 0) {
    throw new PartialFailure(`${failed} of ${results.length} messages were not acknowledged`);
  }
}

function printMessages(
  ctx: Context,
  topic: string,
  group: string,
  results: readonly ReceiveResult[],
  acked: boolean,
  visibility: number,
): void {
  const out = ctx.out;
  if (results.length === 0) {
    out.print("no messages");
    return;
  }
  const columns = out.columns(DEFAULT_COLUMNS);
  for (const r of results) {
    out.print(messageBlock(r, { columns, paint: out.paint, showHandle: !acked }));
    if (r.error) {
      out.print(
        `  ${out.paint("red", "not acknowledged:")} ${r.error.code} (HTTP ${r.error.status}): ${r.error.message}`,
      );
    }
  }
  const n = results.length === 1 ? "1 message" : `${results.length} messages`;
  if (acked) {
    out.print(`${n}, acknowledged`);
  } else {
    out.print(`${n}, leased for ${visibility} s`);
    out.note(`acknowledge one with: vqs ack ${topic} ${group} <receipt-handle>`);
  }
}

async function runAck(ctx: Context, topic: string, group: string, handles: readonly string[]) {
  checkName("topic", topic);
  checkName("group", group);
  const api = ctx.api();
  const results: AckResult[] = [];
  for (const receiptHandle of handles) {
    try {
      await api.acknowledge(topic, group, receiptHandle);
      results.push({ receiptHandle, acknowledged: true });
    } catch (err) {
      results.push({ receiptHandle, acknowledged: false, error: entryFailure(err) });
    }
  }
  if (ctx.out.json) {
    ctx.out.printJson(results);
  } else {
    for (const r of results) {
      if (r.error) {
        ctx.out.print(
          `${ctx.out.paint("red", "failed")}        ${r.receiptHandle}  ${r.error.code} (HTTP ${r.error.status}): ${r.error.message}`,
        );
      } else {
        ctx.out.print(`${ctx.out.paint("green", "acknowledged")}  ${r.receiptHandle}`);
      }
    }
  }
  const failed = results.filter((r) => r.error).length;
  if (failed > 0) {
    throw new PartialFailure(`${failed} of ${results.length} receipt handles were refused`);
  }
}

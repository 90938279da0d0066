// `vqs peek`: the messages of a topic as consumer groups see them, oldest first, with payload
// previews. Peeking leases nothing and changes no delivery count (the management API's GET
// .../messages), so it is safe on a live topic.
import type { Command } from "commander";
import type { PeekedMessage } from "../../api-client.js";
import type { Context } from "../../context.js";
import { preview } from "../../messages/preview.js";
import { DEFAULT_COLUMNS } from "../../messages/show.js";
import { checkName, parseInteger } from "../../options.js";
import { formatBytes } from "../../output.js";
import { examples, type ContextOf } from "../help.js";

interface PeekFlags {
  readonly after?: string;
  readonly limit: string;
  readonly full?: boolean;
}

export function peekCommand(program: Command, contextOf: ContextOf): void {
  const cmd = program
    .command("peek")
    .description(
      "show a topic's messages, oldest first, with payload previews, without receiving them " +
        "(nothing is leased, no delivery count changes)",
    )
    .argument("<topic>", "the topic")
    .option("--after <id|time>", "start after this message ID, or at this ISO time")
    .option("--limit <n>", "how many, 1..100", "20")
    .option("--full", "--json: include each whole payload (base64)")
    .action(async (t: string, _o: PeekFlags, c: Command) =>
      runPeek(contextOf(c), t, c.opts<PeekFlags>()),
    );
  examples(cmd, [
    "vqs peek orders",
    "vqs peek orders --after 2026-11-23T04:00:00Z --limit 100",
    "vqs peek orders --json --full | jq -r '.messages[0].payload' | base64 -d",
  ]);
}

async function runPeek(ctx: Context, topic: string, o: PeekFlags): Promise<void> {
  checkName("topic", topic);
  const limit = parseInteger("--limit", o.limit, 1, 100);
  const page = await ctx.api().peek(topic, {
    limit,
    full: o.full === true,
    ...(o.after !== undefined ? { after: o.after } : {}),
  });
  if (ctx.out.json) return ctx.out.printJson(page);
  const out = ctx.out;
  if (page.messages.length === 0) return out.print("no messages");
  const columns = out.columns(DEFAULT_COLUMNS);
  // The preview gets what the other columns leave (at least 20).
  const fixed = (m: PeekedMessage) =>
    [m.messageId, m.timestamp, m.contentType, formatBytes(m.size)].join("  ").length + 2;
  const widest = Math.max(...page.messages.map(fixed), 0) + 16;
  const width = Math.max(20, columns - widest);
  out.printTable<PeekedMessage>(
    [
      { header: "ID", value: (m) => m.messageId, colour: () => "cyan" },
      { header: "PUBLISHED", value: (m) => m.timestamp },
      { header: "TYPE", value: (m) => m.contentType },
      { header: "SIZE", value: (m) => formatBytes(m.size) },
      {
        header: "PAYLOAD",
        value: (m) => peekPreview(m, width),
        colour: (m) => (m.previewEncoding === "utf8" ? undefined : "dim"),
      },
    ],
    page.messages,
  );
  if (page.next !== null) out.note(`more: vqs peek ${topic} --after ${page.next}`);
}

/** The server's first 256 bytes as one line, as `receive` shows payloads. */
function peekPreview(m: PeekedMessage, width: number): string {
  const bytes = Buffer.from(m.preview, m.previewEncoding === "utf8" ? "utf8" : "base64");
  const text = preview(bytes, width).text;
  return m.size > bytes.length && !text.endsWith("…") ? `${text}…` : text;
}

// `vqs dlq redrive`: moves a dead-letter topic's messages back, in rounds of --batch, with a
// progress bar on a terminal; Ctrl-C stops after the current round and says how to resume
// (src/cli/messages/redrive.ts holds the rounds).
import type { Command } from "commander";
import type { Context } from "../context.js";
import { Interrupted } from "../errors.js";
import { redriveRounds, type RedriveEnd } from "../messages/redrive.js";
import { checkName, parseInteger } from "../options.js";
import { progressBar } from "../terminal/progress.js";
import { examples, type ContextOf } from "./help.js";

/** The server's bound of one redrive request (src/http/routes/redrive.ts). */
const BATCH_MAX = 10_000;

interface RedriveFlags {
  readonly to?: string;
  readonly limit?: string;
  readonly batch: string;
}

/** What `dlq redrive --json` prints. */
export interface RedriveReport {
  readonly moved: number;
  readonly remaining: number;
  readonly interrupted?: true;
}

export function dlqCommand(program: Command, contextOf: ContextOf): void {
  const dlq = program
    .command("dlq")
    .description("dead-letter topics: move their messages back (redrive)");
  examples(dlq, ["vqs dlq redrive orders-dead"]);

  const redrive = dlq
    .command("redrive")
    .description(
      "move the messages of a dead-letter topic back, oldest first, each as a new message " +
        "(delivery count 1) to the topic it was dead-lettered from, or to --to",
    )
    .argument("<dead-letter-topic>", "the dead-letter topic")
    .option("--to <topic>", "move every message to this topic instead")
    .option("--limit <n>", "move at most this many in all (default: all)")
    .option("--batch <n>", `messages per request, 1..${BATCH_MAX}`, "100")
    .addHelpText(
      "after",
      [
        "",
        "Ctrl-C stops after the current round (the server finishes a round it started); run the",
        "same command again to resume. No message is moved twice: each copy carries a",
        "deduplication token of its place in the dead-letter topic and is then removed from it.",
        "Exit 130 when interrupted.",
      ].join("\n"),
    )
    .action(async (topic: string, _o: RedriveFlags, cmd: Command) => {
      await runRedrive(contextOf(cmd), topic, cmd.opts<RedriveFlags>());
    });
  examples(redrive, [
    "vqs dlq redrive orders-dead",
    "vqs dlq redrive orders-dead --limit 1000 --batch 200",
    "vqs dlq redrive orders-dead --to orders-retry --json",
  ]);
}

async function runRedrive(ctx: Context, topic: string, o: RedriveFlags): Promise<void> {
  checkName("topic", topic);
  if (o.to !== undefined) checkName("topic", o.to);
  const batch = parseInteger("--batch", o.batch, 1, BATCH_MAX);
  const limit =
    o.limit === undefined ? null : parseInteger("--limit", o.limit, 1, Number.MAX_SAFE_INTEGER);
  const api = ctx.api();
  const signal = ctx.interrupts();
  ctx.out.note(
    `redriving ${topic} in rounds of ${batch}${limit === null ? "" : `, ${limit} at most`} ` +
      "(Ctrl-C stops after the current round)",
  );
  // A bar only on a terminal (colour as stderr's); elsewhere the final line says it all.
  const bar = progressBar(ctx.stderr, ctx.env, ctx.out.paintErr);

  let result;
  try {
    result = await redriveRounds(
      api,
      { deadLetterTopic: topic, ...(o.to !== undefined ? { to: o.to } : {}), limit, batch, signal },
      (p) => {
        const total =
          limit === null ? p.moved + p.remaining : Math.min(limit, p.moved + p.remaining);
        bar?.update(p.moved, total, signal.aborted ? "stopping..." : "");
      },
    );
  } finally {
    bar?.stop();
  }

  const { moved, remaining, end } = result;
  const report: RedriveReport = {
    moved,
    remaining,
    ...(end === "interrupted" ? { interrupted: true as const } : {}),
  };
  if (ctx.out.json) ctx.out.printJson(report);
  else ctx.out.print(summary(topic, o.to, moved, remaining));
  const again = resumeCommand(topic, o);
  switch (end satisfies RedriveEnd) {
    case "interrupted":
      ctx.out.note(
        `interrupted after the current round; run it again to resume (nothing is moved twice): ${again}`,
      );
      throw new Interrupted("interrupted");
    case "limit":
      if (remaining > 0) ctx.out.note(`--limit ${limit} reached; to move the rest: ${again}`);
      return;
    case "stuck":
      ctx.out.warn(
        `${remaining} message${remaining === 1 ? "" : "s"} stay in ${topic}: ` +
          (o.to === undefined
            ? "not dead-letter copies (they name no topic to go back to: give --to), or "
            : "") +
          `dead-lettered during the redrive (run it again)`,
      );
      return;
    case "empty":
      return;
  }
}

function summary(topic: string, to: string | undefined, moved: number, remaining: number) {
  const where = to === undefined ? "to the topics they came from" : `to ${to}`;
  const n = moved === 1 ? "1 message" : `${moved} messages`;
  return `moved ${n} ${where}; ${remaining} remain in ${topic}`;
}

/** The same command without --limit: what resumes a redrive. */
function resumeCommand(topic: string, o: RedriveFlags): string {
  return [
    "vqs dlq redrive",
    topic,
    ...(o.to !== undefined ? ["--to", o.to] : []),
    ...(o.batch !== "100" ? ["--batch", o.batch] : []),
  ].join(" ");
}

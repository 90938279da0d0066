// The pure parts of `vqs receive`, `vqs tail` and `vqs dlq redrive`: payload previews, the
// tail's loop against a scripted API (what it shows, acknowledges and releases, and when),
// the rounds of a redrive, the progress bar, which settings apply to a group.
import { describe, expect, it } from "vitest";
import type { ApiClient, ReceivedMessage, SettingsDocument } from "../../../src/cli/api-client.js";
import { applicableSettings } from "../../../src/cli/commands/tail.js";
import { preview } from "../../../src/cli/messages/preview.js";
import { redriveRounds } from "../../../src/cli/messages/redrive.js";
import { messageLine } from "../../../src/cli/messages/show.js";
import { tail, type TailMode } from "../../../src/cli/messages/tail.js";
import { formatBytes, formatDuration, noPaint } from "../../../src/cli/output.js";
import { progressBar, progressLine } from "../../../src/cli/terminal/progress.js";

describe("payload previews", () => {
  const b = (s: string) => Buffer.from(s);

  it("show printable UTF-8 as text on one line, cut to the width", () => {
    expect(preview(b('{"id":1}'), 40)).toEqual({ kind: "text", text: '{"id":1}' });
    expect(preview(b("a\r\nb\tc"), 40).text).toBe("a\\r\\nb\\tc");
    expect(preview(b("héllo 中文 😀"), 40).text).toBe("héllo 中文 😀");
    expect(preview(b("x".repeat(50)), 20).text).toBe(`${"x".repeat(19)}…`);
    expect(preview(b(""), 20)).toEqual({ kind: "empty", text: "(empty)" });
  });

  it("show anything else as hex bytes, as many as fit", () => {
    expect(preview(new Uint8Array([0, 1, 0xff]), 40)).toEqual({
      kind: "binary",
      text: "hex 00 01 ff",
    });
    expect(preview(b("text\u0000nul"), 40).kind).toBe("binary");
    expect(preview(b("bell\u0007"), 40).kind).toBe("binary");
    expect(preview(new Uint8Array([0xc3, 0x28]), 40).kind).toBe("binary"); // invalid UTF-8
    expect(preview(b("\u{e000}"), 40).kind).toBe("binary"); // private use
    const long = preview(new Uint8Array(100), 20).text;
    expect(long).toBe("hex 00 00 00 00 00 …");
    expect(long.length).toBeLessThanOrEqual(20);
  });

  it("sizes read as people write them", () => {
    expect([0, 1023, 1536, 3 * 1024 * 1024].map(formatBytes)).toEqual([
      "0 B",
      "1023 B",
      "1.5 KiB",
      "3.0 MiB",
    ]);
  });

  it("tail's line leaves the preview what the fields leave of the width", () => {
    const line = messageLine(msg("m1_x", "y".repeat(200), { deliveryCount: 3 }), {
      columns: 100,
      paint: noPaint,
    });
    expect(line).toMatch(/^2026-01-05T10:00:00\.000Z {2}m1_x {2}text\/plain {2}delivery 3 {2}y+…$/);
    expect([...line].length).toBe(100);
  });
});

function msg(
  id: string,
  body: string,
  o: { timestamp?: string; deliveryCount?: number } = {},
): ReceivedMessage {
  return {
    messageId: id,
    receiptHandle: `h-${id}`,
    deliveryCount: o.deliveryCount ?? 1,
    timestamp: o.timestamp ?? "2026-01-05T10:00:00.000Z",
    expiresAt: "2026-01-06T10:00:00.000Z",
    contentType: "text/plain",
    body: Buffer.from(body).toString("base64"),
  };
}

/** An ApiClient that answers receives from a script and records every call. */
function scriptedApi(answers: { messages: ReceivedMessage[]; date?: string }[]) {
  const calls: string[] = [];
  let i = 0;
  const api = {
    receive: (_t: string, _g: string, o: { waitSeconds: number; signal?: AbortSignal }) => {
      calls.push(`receive wait=${o.waitSeconds}`);
      const a = answers[i++];
      if (a) return Promise.resolve({ messages: a.messages, date: new Date(a.date ?? 0) });
      // Nothing more scripted: a long poll, until aborted.
      return new Promise((_r, reject) =>
        o.signal?.addEventListener("abort", () => reject(new Error("aborted"))),
      );
    },
    acknowledge: (_t: string, _g: string, h: string) => {
      calls.push(`ack ${h}`);
      return Promise.resolve();
    },
    setVisibility: (_t: string, _g: string, h: string, s: number) => {
      calls.push(`visibility ${h} ${s}`);
      return Promise.resolve();
    },
  };
  return { api: api as unknown as ApiClient, calls };
}

async function runTail(
  answers: Parameters<typeof scriptedApi>[0],
  mode: TailMode,
  o: { count?: number; fromStart?: boolean; stopAfterMs?: number } = {},
) {
  const { api, calls } = scriptedApi(answers);
  const shown: string[] = [];
  const notes: string[] = [];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), o.stopAfterMs ?? 50);
  const summary = await tail(
    api,
    {
      topic: "t",
      group: "g",
      mode,
      fromStart: o.fromStart ?? false,
      count: o.count ?? null,
      signal: controller.signal,
    },
    {
      started: (since) =>
        notes.push(`started ${since === null ? "-" : new Date(since).toISOString()}`),
      message: (m) => shown.push(m.messageId),
      note: (t) => notes.push(t),
      warn: (t) => notes.push(`warn ${t}`),
    },
  );
  clearTimeout(timer);
  return { summary, calls, shown, notes };
}

describe("the tail's loop", () => {
  const at = (s: string) => `2026-01-05T10:00:${s}.000Z`;

  it("own group: skips (acknowledges) what was published before its start, shows and acknowledges the rest", async () => {
    const r = await runTail(
      [
        {
          date: at("05"),
          messages: [
            msg("old", "a", { timestamp: at("04") }),
            msg("same", "b", { timestamp: at("05") }),
          ],
        },
        { messages: [msg("new", "c", { timestamp: at("09") })] },
      ],
      "own-group",
    );
    expect(r.shown).toEqual(["same", "new"]);
    expect(r.calls).toEqual([
      "receive wait=0",
      "ack h-old",
      "ack h-same",
      "receive wait=20",
      "ack h-new",
      "receive wait=20",
    ]);
    expect(r.notes).toEqual([
      `started ${at("05")}`,
      "skipped 1 older messages (--from-start shows them)",
    ]);
    expect(r.summary).toEqual({ shown: 2, skipped: 1, interrupted: true });
  });

  it("own group --from-start: shows everything, waits from the first receive", async () => {
    const r = await runTail(
      [{ date: at("05"), messages: [msg("old", "a", { timestamp: at("01") })] }],
      "own-group",
      { fromStart: true },
    );
    expect(r.shown).toEqual(["old"]);
    expect(r.calls[0]).toBe("receive wait=20");
    expect(r.notes[0]).toBe("started -");
  });

  it("--count: ends after that many; the rest of the batch is handed back unshown", async () => {
    const r = await runTail(
      [{ messages: [msg("a", "1"), msg("b", "2"), msg("c", "3")] }],
      "release",
      {
        count: 2,
        stopAfterMs: 5000,
      },
    );
    expect(r.shown).toEqual(["a", "b"]);
    expect(r.calls).toEqual([
      "receive wait=20",
      "visibility h-a 0",
      "visibility h-b 0",
      "visibility h-c 0",
    ]);
    expect(r.summary.interrupted).toBe(false);
    // --ack consumes only what was shown.
    const acked = await runTail([{ messages: [msg("a", "1"), msg("b", "2")] }], "ack", {
      count: 1,
      stopAfterMs: 5000,
    });
    expect(acked.calls).toEqual(["receive wait=20", "ack h-a", "visibility h-b 0"]);
  });

  it("a real group without --ack: shown once; back unclaimed, let go 5 s, 10 s, ... 60 s", async () => {
    const again = (n: number) => ({ messages: [msg("a", "1", { deliveryCount: n })] });
    const r = await runTail(
      [again(1), again(2), again(3), again(4), again(5), again(6), again(7)],
      "release",
    );
    expect(r.shown).toEqual(["a"]);
    expect(r.calls.filter((c) => c.startsWith("visibility"))).toEqual(
      [0, 5, 10, 20, 40, 60, 60].map((s) => `visibility h-a ${s}`),
    );
    expect(r.notes.filter((n) => n.startsWith("warn"))).toHaveLength(1);
  });

  it("a real group with --ack: shows and acknowledges", async () => {
    const r = await runTail([{ messages: [msg("a", "1")] }], "ack");
    expect(r.shown).toEqual(["a"]);
    expect(r.calls).toEqual(["receive wait=20", "ack h-a", "receive wait=20"]);
  });
});

describe("redrive rounds", () => {
  function redriveApi(total: number, stuck = 0) {
    let left = total;
    const asked: number[] = [];
    const api = {
      redrive: (_t: string, o: { limit: number }) => {
        asked.push(o.limit);
        const moved = Math.min(o.limit, left - stuck);
        left -= moved;
        return Promise.resolve({ moved, remaining: left });
      },
    } as unknown as ApiClient;
    return { api, asked };
  }
  const signal = new AbortController().signal;

  it("asks a batch at a time until nothing remains", async () => {
    const { api, asked } = redriveApi(25);
    const seen: number[] = [];
    const r = await redriveRounds(
      api,
      { deadLetterTopic: "d", limit: null, batch: 10, signal },
      (p) => seen.push(p.moved),
    );
    expect(r).toEqual({ moved: 25, remaining: 0, rounds: 3, end: "empty" });
    expect(asked).toEqual([10, 10, 10]);
    expect(seen).toEqual([10, 20, 25]);
  });

  it("stops at --limit, asking no more than it allows", async () => {
    const { api, asked } = redriveApi(25);
    const r = await redriveRounds(
      api,
      { deadLetterTopic: "d", limit: 13, batch: 5, signal },
      () => {},
    );
    expect(r).toEqual({ moved: 13, remaining: 12, rounds: 3, end: "limit" });
    expect(asked).toEqual([5, 5, 3]);
  });

  it("stops when a round moves fewer than asked though some remain", async () => {
    const { api } = redriveApi(25, 3);
    const r = await redriveRounds(
      api,
      { deadLetterTopic: "d", limit: null, batch: 10, signal },
      () => {},
    );
    expect(r).toEqual({ moved: 22, remaining: 3, rounds: 3, end: "stuck" });
  });

  it("stops after the round during which Ctrl-C came", async () => {
    const { api, asked } = redriveApi(25);
    const c = new AbortController();
    const r = await redriveRounds(
      api,
      { deadLetterTopic: "d", limit: null, batch: 10, signal: c.signal },
      () => c.abort(),
    );
    expect(r).toEqual({ moved: 10, remaining: 15, rounds: 1, end: "interrupted" });
    expect(asked).toEqual([10]);
  });
});

describe("progress bar", () => {
  it("shows done/total, percent, rate and ETA within the terminal's width", () => {
    const line = progressLine(
      { value: 50, total: 200 },
      { columns: 60, paint: noPaint, seconds: 2, label: "" },
    );
    expect(line).toBe(`[${"#".repeat(8)}${"-".repeat(23)}] 50/200  25%  25/s  ETA 6s`);
    expect(line.length).toBeLessThanOrEqual(60);
  });

  it("is drawn by cli-progress on a terminal only, and its line ends on stop", () => {
    let now = 0;
    const tty = { text: "", columns: 60, isTTY: true, write: (s: string) => (tty.text += s) };
    const bar = progressBar(tty, {}, noPaint, () => now);
    expect(bar).not.toBeNull();
    bar?.update(0, 200);
    now = 2000;
    bar?.update(200, 200);
    bar?.stop();
    expect(tty.text).toContain(`[${"#".repeat(36)}] 200/200  100%  100/s`);
    expect(tty.text.endsWith("\n")).toBe(true);

    const pipe = { text: "", isTTY: false, write: (s: string) => (pipe.text += s) };
    expect(progressBar(pipe, {}, noPaint)).toBeNull();
    expect(progressBar(tty, { TERM: "dumb" }, noPaint)).toBeNull();
  });

  it("durations read as 45s, 3m05s, 2h10m, 3d04h", () => {
    expect([45, 185, 7800, 273_600].map(formatDuration)).toEqual([
      "45s",
      "3m05s",
      "2h10m",
      "3d04h",
    ]);
  });
});

describe("which settings apply to a group", () => {
  const doc = (topic: string, group: string): SettingsDocument => ({
    topic,
    consumerGroup: group,
    push: null,
    retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
    deadLetter: { topic: `${topic.replace("*", "")}dead`, maxDeliveries: 3 },
    flowControl: null,
    updatedAt: "2026-01-01T00:00:00.000Z",
  });
  const docs = [doc("orders_*", "g"), doc("orders_eu*", "g"), doc("orders_eu", "other")];

  it("the topic's own, else the longest matching pattern's", () => {
    expect(applicableSettings(docs, "orders_eu", "g")?.topic).toBe("orders_eu*");
    expect(applicableSettings(docs, "orders_us", "g")?.topic).toBe("orders_*");
    expect(applicableSettings([...docs, doc("orders_eu", "g")], "orders_eu", "g")?.topic).toBe(
      "orders_eu",
    );
    expect(applicableSettings(docs, "orders", "g")).toBeNull();
    expect(applicableSettings(docs, "orders_eu", "nobody")).toBeNull();
  });
});

// The `vqs` program in process: every command's --help (with an example), exit codes of usage
// errors, tables and colour. What needs a gateway is in test/integration/cli/triggers.test.ts.
import type { Command } from "commander";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { buildProgram, run } from "../../../src/cli/program.js";
import {
  ansiPaint,
  colourEnabled,
  formatFlowControl,
  formatTable,
  noPaint,
  type Io,
} from "../../../src/cli/output.js";

function fakeIo(env: NodeJS.ProcessEnv = {}, tty = false) {
  const out = { text: "", isTTY: tty, write: (s: string) => (out.text += s) };
  const err = { text: "", isTTY: tty, write: (s: string) => (err.text += s) };
  const io: Io = { stdout: out, stderr: err, env, cwd: process.cwd() };
  return { io, out, err };
}

/** Every command of the tree, as the words that run it. */
function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands
    .filter((c) => c.name() !== "help")
    .flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

describe("vqs --help", () => {
  const paths = [[], ...commandPaths(buildProgram(fakeIo().io))];

  it("covers the commands of this version", () => {
    expect(paths.map((p) => p.join(" "))).toEqual([
      "",
      "triggers",
      "triggers sync",
      "token",
      "receive",
      "ack",
      "tail",
      "dlq",
      "dlq redrive",
      "topics",
      "topic",
      "groups",
      "keys",
      "namespaces",
      "peek",
      "publish",
      "purge",
      "delete",
      "seek",
      "settings",
      "settings list",
      "settings get",
      "settings put",
      "settings delete",
    ]);
  });

  it.each(paths.map((p) => [p.join(" ") || "(program)", p] as const))(
    "%s: exits 0 with a description and an example",
    async (_name, path) => {
      const { io, out } = fakeIo();
      expect(await run([...path, "--help"], io)).toBe(0);
      expect(out.text).toMatch(/^Usage: vqs/);
      expect(out.text).toMatch(/\nExamples?:\n {2}\$ vqs|\nExamples?:\n {2}\$ export/);
    },
  );

  it("prints the version", async () => {
    const { io, out } = fakeIo();
    expect(await run(["--version"], io)).toBe(0);
    expect(out.text.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("usage errors exit 2 without sending anything", () => {
  it.each([
    [["triggers", "sync", "--app-url", "http://localhost:3000", "--bogus"], "unknown option"],
    [["triggers", "sync"], "--app-url"],
    [["nope"], "unknown command"],
    [[], "Usage: vqs"],
    [["triggers"], "Usage: vqs triggers"],
    [["triggers", "sync", "--app-url", "localhost:3000"], "--app-url"],
    [["triggers", "sync", "--app-url", "http://h", "--route", "x.ts"], "--route"],
    [["token", "--ttl", "0"], "--ttl"],
    [["receive", "t", "g", "--max", "0"], "--max"],
    [["receive", "t", "g", "--max", "11"], "--max"],
    [["receive", "t", "g", "--visibility", "3601"], "--visibility"],
    [["receive", "bad name", "g"], "not a valid name"],
    [["receive", "t", "g", "--wait", "2.5"], "--wait"],
    [["receive", "t"], "missing required argument"],
    [["ack", "t", "g"], "missing required argument"],
    [["tail", "t", "--ack"], "--ack needs --group"],
    [["tail", "t", "--count", "0"], "--count"],
    [["tail", "t", "--group", "g", "--from-start"], "--from-start"],
    [["tail", "t", "--group", "bad name"], "not a valid name"],
    [["dlq", "redrive", "d", "--batch", "10001"], "--batch"],
    [["dlq", "redrive", "d", "--batch", "0"], "--batch"],
    [["dlq", "redrive", "d", "--limit", "x"], "--limit"],
    [["dlq", "redrive"], "missing required argument"],
    [["dlq", "redrive", "d", "--to", "a/b"], "not a valid name"],
    [["dlq"], "Usage: vqs dlq"],
    [["publish", "t", "--delay", "604801"], "--delay"],
    [["publish", "t", "--ttl", "59"], "--ttl"],
    [["publish", "t", "--count", "2", "--key", "k"], "--key with --count"],
    [["publish", "t", "--key", "clé"], "--key must be 1..256 visible ASCII"],
    [["publish", "t", "--key", ""], "--key must be 1..256 visible ASCII"],
    [["publish", "t", "--content-type", "text/plain\u010d\u010a"], "--content-type must be"],
    [["publish", "t", "--data", "x", "--file", "f"], "give one of"],
    [["publish", "t", "payload"], "unexpected argument"],
    [["peek", "t", "--limit", "101"], "--limit"],
    [["keys", "t", "g", "--limit", "0"], "--limit"],
    [["keys", "t", "g", "--limit", "101"], "--limit"],
    [["keys", "t", "bad name"], "not a valid name"],
    [["keys", "t"], "missing required argument"],
    [["seek", "t", "g", "yesterday"], "not earliest, latest"],
    [["delete", "t", "bad name"], "not a valid name"],
    [["settings", "put", "t", "g"], "give the document"],
    [["settings", "put", "t", "g", "--data", "{"], "not JSON"],
    [["--namespace", "a/b/c", "--deployment-id", "d", "--token", "t", "topics"], "--namespace"],
  ])("%j", async (argv, says) => {
    const { io, err } = fakeIo();
    expect(await run(argv, io)).toBe(2);
    expect(err.text).toContain(says);
  });

  it("a missing token is a usage error naming VQS_TOKEN", async () => {
    const { io, err } = fakeIo();
    const code = await run(
      ["triggers", "sync", "--vercel-json", "package.json", "--app-url", "http://h"],
      io,
    );
    expect(code).toBe(2);
    expect(err.text).toContain("VQS_TOKEN");
  });

  it("with --json, errors are the API's JSON shape on stderr", async () => {
    const { io, out, err } = fakeIo();
    expect(await run(["--json", "triggers", "sync", "--app-url", "ftp://x"], io)).toBe(2);
    expect(out.text).toBe("");
    expect(JSON.parse(err.text)).toEqual({
      error: { code: "usage", message: expect.stringContaining("--app-url") as string },
    });
  });

  it("vqs token refuses production", async () => {
    const { io, err } = fakeIo({ NODE_ENV: "production" });
    expect(await run(["token"], io)).toBe(2);
    expect(err.text).toContain("development");
  });
});

describe("destructive commands", () => {
  /** A gateway that must not be asked: every request fails the test. */
  const env = { VQS_URL: "http://127.0.0.1:9", VQS_TOKEN: "t" };

  it.each([
    [["purge", "t"]],
    [["delete", "t"]],
    [["delete", "t", "g"]],
    [["seek", "t", "g", "earliest"]],
    [["settings", "delete", "t", "g"]],
  ])("%j without --yes off a terminal: exit 4, nothing sent", async (argv) => {
    const { io, err } = fakeIo(env);
    // Port 9 refuses: a request would be exit 3, not 4.
    expect(await run(argv, io)).toBe(4);
    expect(err.text).toContain("--yes");
  });

  it("on a terminal, ask; anything but y/yes is exit 4", async () => {
    const { io, err } = fakeIo({ ...env, NO_COLOR: "1" }, true);
    const answer = (text: string) =>
      Object.assign(Readable.from([Buffer.from(text)]), { isTTY: true });
    expect(await run(["purge", "orders"], { ...io, stdin: answer("n\n") })).toBe(4);
    expect(err.text).toContain("remove every message of orders? [y/N]");
    expect(err.text).toContain("nothing was changed");
    // "y": it goes on and sends (here to nobody: exit 3).
    expect(await run(["purge", "orders"], { ...io, stdin: answer("y\n") })).toBe(3);
  });
});

describe("output", () => {
  const rows = [
    { a: "created", b: "x" },
    { a: "unchanged", b: "longer value" },
  ];
  const columns = [
    { header: "ACTION", value: (r: (typeof rows)[number]) => r.a, colour: () => "green" as const },
    { header: "V", value: (r: (typeof rows)[number]) => r.b },
  ];

  it("aligns columns two spaces apart, last column unpadded", () => {
    expect(formatTable(columns, rows, noPaint)).toBe(
      "ACTION     V\ncreated    x\nunchanged  longer value\n",
    );
  });

  it("colours only when asked to, and never changes the text", () => {
    const coloured = formatTable(columns, rows, ansiPaint);
    expect(coloured).toContain("\x1b[32mcreated  ");
    // eslint-disable-next-line no-control-regex
    expect(coloured.replace(/\x1b\[\d+m/g, "")).toBe(formatTable(columns, rows, noPaint));
  });

  it("decides colour from the flag, NO_COLOR, FORCE_COLOR, then the terminal", () => {
    const tty = { isTTY: true, write: () => true };
    const pipe = { isTTY: false, write: () => true };
    expect(colourEnabled(tty, {}, undefined)).toBe(true);
    expect(colourEnabled(pipe, {}, undefined)).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: "1" }, undefined)).toBe(false);
    expect(colourEnabled(tty, { TERM: "dumb" }, undefined)).toBe(false);
    expect(colourEnabled(pipe, { FORCE_COLOR: "1" }, undefined)).toBe(true);
    expect(colourEnabled(tty, {}, false)).toBe(false);
    expect(colourEnabled(pipe, { NO_COLOR: "1" }, true)).toBe(true);
  });

  it("says a group's flow control in one line, its key first", () => {
    expect(formatFlowControl(null)).toBe("-");
    expect(formatFlowControl(undefined)).toBe("-");
    expect(formatFlowControl({ key: "tenant", concurrency: 2, rate: null, ordered: false })).toBe(
      "tenant: concurrency 2",
    );
    expect(
      formatFlowControl({
        key: "tenant",
        concurrency: 1,
        rate: { limit: 10, periodSeconds: 60, burst: 20 },
        ordered: true,
      }),
    ).toBe("tenant: concurrency 1, rate 10/60s (burst 20), ordered");
  });
});

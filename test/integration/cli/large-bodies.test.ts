// Large bodies through `vqs`, spawned as a user runs it, against a real gateway: `publish --file`
// streams a file (sent with its Content-Length) and stdin (chunked), `receive --out` and
// `--output-dir` write bodies to files as they stream in, byte-exact by SHA-256, nothing left
// behind under a temporary name; a file over the gateway's limit is refused before it is sent.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SavedMessage } from "../../../src/cli/messages/receive-files.js";
import { runCli, type CliRun } from "../../helpers/cli.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";

/** A body above the gateway's inline limit (stored aside, streamed), a few MB to stay quick. */
const SIZE = 3_000_000;
/** The gateway's limit in this file: a file larger is refused with 413. */
const LIMIT = 5_000_000;

const fx = useGateways(1, { env: { VQS_MAX_MESSAGE_BYTES: String(LIMIT) } });
let token: string;
let dir: string;

beforeAll(async () => {
  token = await fx.issuer.token({ project_id: uniqueName("prj") });
  dir = await mkdtemp(join(tmpdir(), "vqs-cli-large-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const env = () => ({ VQS_URL: fx.gateways[0]!.url, VQS_TOKEN: token });
const vqs = (args: string[], input?: Uint8Array): Promise<CliRun> =>
  runCli(args, { env: env(), cwd: dir, ...(input ? { input } : {}) });
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function publishFile(topic: string, body: Buffer, name: string): Promise<string> {
  await writeFile(join(dir, name), body);
  const r = await vqs(["publish", topic, "--file", name, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { messageId: string }).messageId;
}

describe("vqs publish --file and receive --out with large bodies", () => {
  it("a file goes out streamed and comes back into a file byte-exact", async () => {
    const topic = uniqueName("big");
    const body = randomBytes(SIZE);
    const id = await publishFile(topic, body, "in.bin");

    const r = await vqs(["receive", topic, "g", "--out", "out.bin", "--ack", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const [m] = JSON.parse(r.stdout) as SavedMessage[];
    expect(m).toMatchObject({
      messageId: id,
      deliveryCount: 1,
      contentType: "application/octet-stream",
      size: SIZE,
      sha256: sha256(body),
      acknowledged: true,
      file: join(dir, "out.bin"),
    });
    expect(sha256(await readFile(join(dir, "out.bin")))).toBe(sha256(body));
    expect((await readdir(dir)).filter((f) => f.endsWith(".part"))).toEqual([]);
    // Acknowledged: nothing is left for the group.
    const again = await vqs(["receive", topic, "g", "--out", "none.bin"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe("no messages");
    expect((await readdir(dir)).includes("none.bin")).toBe(false);
  });

  it("stdin is streamed (no Content-Length); --output-dir writes a file per message ID", async () => {
    const topic = uniqueName("big");
    const a = randomBytes(SIZE);
    const b = Buffer.from('{"small":true}');
    const first = await vqs(["publish", topic, "-", "--json"], a);
    expect(first.code, first.stderr).toBe(0);
    const idA = (JSON.parse(first.stdout) as { messageId: string }).messageId;
    const idB = await publishFile(topic, b, "small.json");

    const r = await vqs(["receive", topic, "g", "--max", "10", "--output-dir", "bodies"]);
    expect(r.code, r.stderr).toBe(0);
    const files = (await readdir(join(dir, "bodies"))).sort();
    expect(files).toEqual([idA, idB].sort());
    expect(sha256(await readFile(join(dir, "bodies", idA)))).toBe(sha256(a));
    expect(await readFile(join(dir, "bodies", idB), "utf8")).toBe('{"small":true}');
    // Text output: each message's head line and where its body went, with its SHA-256.
    expect(r.stdout).toContain(`saved to ${join(dir, "bodies", idA)}  sha256 ${sha256(a)}`);
    expect(r.stdout).toMatch(/receipt handle {2}[A-Za-z0-9_-]{54}/);
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe("2 messages saved, leased for 60 s");
  });

  it("a file over the gateway's limit is refused (413) before it is sent; flags are checked", async () => {
    const topic = uniqueName("big");
    await writeFile(join(dir, "huge.bin"), randomBytes(LIMIT + 1));
    const r = await vqs(["publish", topic, "--file", "huge.bin"]);
    // The gateway answers 413 before reading, then discards the rest for a moment before it
    // closes (a lingering close): the tool reads the answer rather than a reset.
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("payload_too_large");
    const peek = await api(fx.gateways[0]!.url, token).call("GET", `${topic}/messages`);
    expect([200, 404]).toContain(peek.status);
    if (peek.status === 200) {
      expect(((await peek.json()) as { messages: unknown[] }).messages).toEqual([]);
    }

    const both = await vqs(["receive", topic, "g", "--out", "x", "--output-dir", "y"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give one of --out and --output-dir");
    const many = await vqs(["receive", topic, "g", "--out", "x", "--max", "5"]);
    expect(many.code).toBe(2);
    expect(many.stderr).toContain("--out writes one message's body");
  });
});

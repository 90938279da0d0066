// The two-command promise: the service process with no NATS_URL starts an embedded nats-server
// and development auth, prints a working token, `npm run token` makes more, the web console's
// sign-in page can ask for one, and SIGTERM stops both cleanly. In production it refuses to start without its settings.
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, parts } from "../../helpers/http.js";
import { scrape } from "../../helpers/metrics.js";

const tsx = join(process.cwd(), "node_modules", ".bin", "tsx");
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "vqs-dev-"));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function envWithout(names: string[]): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const n of names) delete env[n];
  return env;
}

const SETTINGS = [
  "NATS_URL",
  "VQS_OIDC_JWKS_URL",
  "VQS_OIDC_ISSUER",
  "VQS_OIDC_AUDIENCE",
  "VQS_RECEIPT_SECRET",
  "NODE_ENV",
];

describe("npm start (development)", () => {
  it("runs on an embedded nats-server with development auth, and stops on SIGTERM", async () => {
    // One process (`node --import tsx`), so the signals reach the service itself.
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "--data-dir", dataDir],
      {
        env: {
          ...envWithout(SETTINGS),
          PORT: "0",
          VQS_METRICS_PORT: "0",
          HOST: "127.0.0.1",
          LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      for (let i = 0; i < 200 && !/export VQS_TOKEN=\S+/.test(out); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const token = /export VQS_TOKEN=(\S+)/.exec(out)?.[1];
      const base = /curl -X POST (http:\/\/127\.0\.0\.1:\d+)\/api/.exec(out)?.[1];
      expect(token, out).toBeDefined();
      expect(base, out).toBeDefined();

      const q = api(base!, token!);
      expect((await q.publish("hello", "hi")).status).toBe(201);
      const got = await parts(await q.receive("hello", "workers"));
      expect(got.map((p) => p.body.toString())).toEqual(["hi"]);

      const minted = spawnSync(
        tsx,
        ["scripts/token.ts", "--team", "team_other", "--data-dir", dataDir],
        {
          encoding: "utf8",
        },
      );
      expect(minted.status).toBe(0);
      const other = api(base!, minted.stdout.trim());
      expect((await other.receive("hello", "workers")).status).toBe(204);
      expect((await other.publish("hello", "theirs")).status).toBe(201);

      // The web console is on, and its sign-in page may offer a token that works.
      expect(out).toContain(`Web console: ${base}/console`);
      const page = await fetch(`${base}/console`);
      // 200 after `npm run build`; without a build, a page saying to run it.
      expect([200, 503]).toContain(page.status);
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      const offered = (await (await fetch(`${base}/console/dev-token`)).json()) as {
        token: string;
      };
      expect((await api(base!, offered.token).receive("hello", "workers")).status).toBe(204);

      // The metrics are on a port of their own, named at start; the API port has none.
      const metricsUrl = /^Metrics \(.*\): (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(out)?.[1];
      expect(metricsUrl, out).toBeDefined();
      expect(await scrape(metricsUrl!)).toMatch(/^vqs_nats_connected 1$/m);
      expect((await fetch(`${base}/metrics`)).status).toBe(404);

      const natsUrl = /"url":"(nats:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1];
      expect(natsUrl, out).toBeDefined();
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      // The embedded server went with it.
      const port = Number(natsUrl!.split(":")[2]);
      const probe = await new Promise<string>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => (socket.destroy(), resolve("open")));
        socket.once("error", () => resolve("closed"));
      });
      expect(probe).toBe("closed");
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("production settings", () => {
  it("refuses to start without OIDC settings, naming what is missing", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...envWithout(SETTINGS), NODE_ENV: "production" },
      encoding: "utf8",
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("VQS_OIDC_JWKS_URL");
    expect(r.stderr).toContain("VQS_RECEIPT_SECRET");
  });
});

// The container image, built from the repository's Dockerfile and run for real: buildah builds it
// on a local equivalent of the official Node base (scripts/container-base.mjs: base images cannot
// be pulled here), podman runs it as the Helm chart does (uid 1000, read-only root filesystem, a
// tmpfs /tmp, no capabilities) against a nats-server and a token issuer on the host. Skipped, with
// the reason printed, only where the tools cannot be installed (not root, not Debian-like).
// Runs alone, after every other test (vitest.config.ts): the build is CPU-heavy.
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/dev/nats-server-process.js";
import {
  check,
  containerBase,
  containerSkipReason,
  exec,
  podman,
  ROOT,
  type ContainerBase,
} from "../helpers/processes/container.js";
import { RECEIPT_SECRET } from "../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../helpers/http.js";
import { AUDIENCE, ISSUER, startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { startTestNats, type TestNats } from "../helpers/processes/nats.js";
import { eventually } from "../helpers/wait.js";

const t0 = Date.now(); // before the tools' install, which is part of a cold run
const skipReason = containerSkipReason();
if (skipReason) console.warn(`container image test skipped:\n${skipReason}`);

/** The application's default VQS_SHUTDOWN_GRACE_SECONDS: SIGTERM must end it sooner. */
const GRACE_SECONDS = 25;
const DEV_ONLY = ["typescript", "vitest", "eslint", "tsx", "prettier", "@vercel/queue"];

const run = randomUUID().slice(0, 8);
const image = `localhost/vqs-image-test:${run}`;
const container = `vqs-image-test-${run}`;
let base: ContainerBase;
let work: string;
let nats: TestNats;
let issuer: TestIssuer;
let url: string;
let buildMs = 0;
let baseMs = 0;

/** The host's npm CA file and registry, for `npm ci` inside the build (see buildImage). */
async function buildNpmConfig(dir: string): Promise<void> {
  const get = async (key: string) =>
    (await exec("npm", ["config", "get", key], { timeoutMs: 30_000 })).stdout.trim();
  const lines = ["update-notifier=false", `registry=${await get("registry")}`];
  const cafile = await get("cafile");
  if (cafile && existsSync(cafile)) {
    await writeFile(join(dir, "npm-ca.pem"), readFileSync(cafile));
    lines.push("cafile=/usr/local/etc/npm-ca.pem");
  }
  await writeFile(join(dir, "npmrc"), `${lines.join("\n")}\n`);
}

/**
 * `buildah bud` of the unchanged Dockerfile, on the local base. The only addition is a read-only
 * mount, for RUN steps only, over /usr/local/etc (an empty directory in Debian and the official
 * image): npm's global config there gives `npm ci` the host's CA file and registry, which this
 * network needs (its TLS is re-signed); mounted over an existing directory, it leaves no trace
 * in the image. `--format docker` because the OCI format has no HEALTHCHECK.
 */
async function buildImage(npmEtc: string): Promise<void> {
  const r = await check(
    "nice",
    [
      "-n",
      "10",
      "buildah",
      ...base.storageArgs,
      "bud",
      "--isolation",
      "chroot",
      "--pull=never",
      "--format",
      "docker",
      "--build-arg",
      `NODE_IMAGE=${base.image}`,
      "--volume",
      `${npmEtc}:/usr/local/etc:ro`,
      "--tag",
      image,
      ROOT,
    ],
    { timeoutMs: 600_000 },
  );
  buildMs = r.ms;
}

/** This machine's runc refuses higher limits than these, and podman's defaults are higher. */
const RUNTIME = [
  "--runtime",
  "runc",
  "--ulimit",
  "nofile=20000:20000",
  "--ulimit",
  "nproc=4096:4096",
] as const;

async function startContainer(port: number): Promise<void> {
  await podman(base, [
    "run",
    "--detach",
    "--name",
    container,
    ...RUNTIME,
    // The host's network: nats-server and the issuer listen on the host's loopback, and the test
    // reaches the gateway there; with podman's bridge every hop would cross a private address.
    "--network",
    "host",
    // As the Helm chart runs it: read-only root, a writable /tmp only, no capabilities, and the
    // image's own user (no --user: the image must bring uid 1000 itself).
    "--read-only",
    "--read-only-tmpfs=false",
    "--tmpfs",
    "/tmp:rw,size=64m,mode=1777",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--env",
    `NATS_URL=${nats.url}`,
    "--env",
    "HOST=127.0.0.1", // the host's network: listen on its loopback only
    "--env",
    `PORT=${port}`,
    "--env",
    "VQS_REGION=iad1",
    "--env",
    `VQS_OIDC_JWKS_URL=${issuer.jwksUrl}`,
    "--env",
    `VQS_OIDC_ISSUER=${ISSUER}`,
    "--env",
    `VQS_OIDC_AUDIENCE=${AUDIENCE}`,
    "--env",
    `VQS_RECEIPT_SECRET=${RECEIPT_SECRET}`,
    image,
  ]);
}

async function logs(): Promise<string> {
  const r = await exec("podman", [...base.storageArgs, "logs", container]);
  // podman logs replays the container's stdout on stdout, and its stderr on stderr.
  return r.stdout + r.stderr;
}

async function readyz(): Promise<number> {
  return fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
    (r) => r.status,
    () => 0,
  );
}

beforeAll(async () => {
  if (skipReason) return;
  work = await mkdtemp(join(tmpdir(), "vqs-image-"));
  const baseStarted = Date.now();
  base = await containerBase();
  baseMs = Date.now() - baseStarted;
  await buildNpmConfig(work);
  await buildImage(work);
  nats = await startTestNats();
  issuer = await startIssuer();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await startContainer(port);
}, 900_000);

afterAll(async () => {
  if (skipReason) return;
  // Everything this file made, also after a failure; the cached base image stays.
  if (base) {
    await exec("podman", [...base.storageArgs, "rm", "--force", "--time", "0", container]);
    await exec("podman", [...base.storageArgs, "rmi", "--force", image]);
  }
  await issuer?.close();
  await nats?.dispose();
  if (work) await rm(work, { recursive: true, force: true });
  console.log(
    `container image test: base ${(baseMs / 1000).toFixed(0)} s, build ` +
      `${(buildMs / 1000).toFixed(0)} s, all ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
}, 120_000);

/** Every file under dir, relative to it (symbolic links are listed, not followed). */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path).map((p) => join(entry.name, p)));
    else out.push(entry.name);
  }
  return out;
}

/** The package directories under node_modules: every folder with its own package.json. */
interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The lockfile paths of the root package's production dependencies and theirs, resolved as Node
 * does: the nearest node_modules/<name> walking up from the dependent's own folder.
 */
function productionClosure(packages: Record<string, LockEntry>): Set<string> {
  const out = new Set<string>();
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf("/node_modules")))) {
      const path = `${dir ? `${dir}/` : ""}node_modules/${name}`;
      if (packages[path] && !packages[path].dev) return path;
      if (dir === "") return undefined;
    }
  };
  const visit = (from: string): void => {
    const entry = packages[from]!;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const path = resolve(from, name);
      if (path === undefined || out.has(path)) continue;
      out.add(path);
      visit(path);
    }
  };
  visit("");
  return out;
}

function installedPackages(nodeModules: string, prefix = "node_modules"): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === ".bin") continue;
    const dir = join(nodeModules, entry.name);
    const names = entry.name.startsWith("@")
      ? readdirSync(dir).map((n) => `${entry.name}/${n}`)
      : [entry.name];
    for (const name of names) {
      const pkgDir = join(nodeModules, name);
      if (!existsSync(join(pkgDir, "package.json"))) continue;
      out.push(`${prefix}/${name}`);
      if (existsSync(join(pkgDir, "node_modules"))) {
        out.push(
          ...installedPackages(join(pkgDir, "node_modules"), `${prefix}/${name}/node_modules`),
        );
      }
    }
  }
  return out;
}

const MB = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

describe.skipIf(skipReason !== null)("the container image", () => {
  it("is built with a HEALTHCHECK, uid 1000 and production settings", async () => {
    const inspect = await podman(base, ["image", "inspect", image]);
    const [config] = JSON.parse(inspect.stdout) as {
      Config: { User: string; Env: string[]; Cmd: string[]; ExposedPorts: object };
      Healthcheck?: { Test: string[] };
    }[];
    expect(config?.Config.User).toBe("1000:1000");
    expect(config?.Config.Env).toContain("NODE_ENV=production");
    expect(config?.Config.Cmd).toEqual(["node", "dist/main.js"]);
    expect(Object.keys(config?.Config.ExposedPorts ?? {})).toEqual(["8080/tcp"]);
    // Kept only by the docker format (OCI has no HEALTHCHECK): the one from the Dockerfile.
    expect(config?.Healthcheck?.Test.slice(0, 2)).toEqual(["CMD", "node"]);
  });

  it("holds dist/, production dependencies and package files only", async () => {
    const diff = await podman(base, ["image", "diff", image, base.image]);
    // What the image adds to its base: /app, the `vqs` tool's link on PATH, and the empty
    // target of the npm cache mount (BuildKit leaves it too). "C" lines are directories whose
    // times changed.
    const added = diff.stdout
      .split("\n")
      .filter((l) => l.startsWith("A ") || l.startsWith("D "))
      .map((l) => l.slice(2))
      .filter((p) => p !== "/app" && !p.startsWith("/app/"))
      .sort();
    expect(added).toEqual(["/root/.npm", "/usr/local/bin/vqs"]);

    const mount = (await podman(base, ["image", "mount", image])).stdout.trim();
    try {
      const app = join(mount, "app");
      expect(readdirSync(app).sort()).toEqual([
        "dist",
        "node_modules",
        "package-lock.json",
        "package.json",
      ]);
      const dist = walk(join(app, "dist"));
      // Compiled JavaScript, and the web console's bundle (off in production unless
      // VQS_CONSOLE=on): its page and content-hashed script and stylesheet.
      const consoleFiles = dist.filter((f) => f.startsWith("console/"));
      expect(dist.filter((f) => !f.startsWith("console/") && !/\.js(\.map)?$/.test(f))).toEqual([]);
      expect(dist).toContain("main.js");
      // nats.js as patches/ leaves it: the build stage's install applies the patch, the runtime
      // stage copies the package (its own install runs no scripts).
      expect(
        readFileSync(join(app, "node_modules/@nats-io/nats-core/lib/parser.js"), "utf8"),
      ).toContain("vqs patch");
      expect(consoleFiles).toContain("console/index.html");
      expect(
        consoleFiles.filter((f) => !/^console\/assets\/main-[A-Z0-9]+\.(js|css)$/.test(f)),
      ).toEqual(["console/index.html"]);

      // Against the lockfile: every installed package is a production one, and every
      // production one that is not an optional (platform) package is installed.
      // The root package's production dependencies only: the example workspaces' (the Workflow
      // DevKit example) are not production dependencies of the gateway and the image is built
      // with --workspaces=false.
      const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
        packages: Record<string, LockEntry>;
      };
      const production = productionClosure(lock.packages);
      const installed = installedPackages(join(app, "node_modules"));
      const notProduction = installed.filter((p) => !production.has(p));
      expect(notProduction).toEqual([]);
      const wanted = [...production].filter((p) => !lock.packages[p]!.optional);
      expect(wanted.filter((p) => !installed.includes(p))).toEqual([]);
      for (const dev of DEV_ONLY) {
        expect(existsSync(join(app, "node_modules", dev)), dev).toBe(false);
      }
      const files = walk(join(app, "node_modules"));
      // npm --omit=dev leaves the scope folders of omitted scoped packages behind, empty.
      const emptyScopes = readdirSync(join(app, "node_modules")).filter(
        (n) => n.startsWith("@") && readdirSync(join(app, "node_modules", n)).length === 0,
      );
      const bytes = [
        ...dist.map((f) => join(app, "dist", f)),
        ...files.map((f) => join(app, "node_modules", f)),
      ]
        .map((f) => statSync(f, { throwIfNoEntry: false })?.size ?? 0)
        .reduce((a, b) => a + b, 0);
      const size = JSON.parse(
        (await podman(base, ["image", "inspect", "--format", "{{json .Size}}", image])).stdout,
      ) as number;
      const baseSize = JSON.parse(
        (await podman(base, ["image", "inspect", "--format", "{{json .Size}}", base.image])).stdout,
      ) as number;
      console.log(
        [
          `image ${image}: ${MB(size)} (base ${MB(baseSize)}, added ${MB(size - baseSize)})`,
          `  /app: package.json, package-lock.json; dist/: ${dist.length} files (.js, .js.map, console/);`,
          `  node_modules/: ${installed.length} packages, ${files.length} files; ${MB(bytes)} in all`,
          `  empty scope folders left by npm --omit=dev: ${emptyScopes.join(" ") || "none"}`,
          `  outside /app: ${added.join(" ")}`,
        ].join("\n"),
      );
      expect(size - baseSize).toBeLessThan(60e6);
    } finally {
      await podman(base, ["image", "unmount", image]);
    }
  });

  it("turns ready against the host's nats-server", async () => {
    const deadline = Date.now() + 60_000;
    let status = 0;
    await eventually(async () => (status = await readyz()) === 200, deadline - Date.now(), 250);
    if (status !== 200)
      throw new Error(`/readyz never turned 200 (last ${status}):\n${await logs()}`);
  }, 70_000);

  it("runs as uid 1000 with a read-only root filesystem", async () => {
    const exec1 = (script: string) =>
      exec("podman", [...base.storageArgs, "exec", container, "node", "-e", script]);
    // PID 1 is node itself (the entrypoint execs it), so SIGTERM reaches the application.
    const proc1 = await exec1(
      "const s=require('fs').readFileSync('/proc/1/status','utf8');" +
        "const c=require('fs').readFileSync('/proc/1/cmdline','utf8');" +
        "console.log(JSON.stringify({uid:/Uid:\\s+(\\d+)/.exec(s)[1],gid:/Gid:\\s+(\\d+)/.exec(s)[1],cmd:c.split('\\0').filter(Boolean)}))",
    );
    expect(JSON.parse(proc1.stdout)).toEqual({
      uid: "1000",
      gid: "1000",
      cmd: ["node", "dist/main.js"],
    });
    const write = (path: string) =>
      exec1(
        `try{require('fs').writeFileSync(${JSON.stringify(path)},'x');console.log('ok')}catch(e){console.log(e.code)}`,
      );
    expect((await write("/app/dist/x")).stdout.trim()).toBe("EROFS");
    expect((await write("/x")).stdout.trim()).toBe("EROFS");
    expect((await write("/tmp/x")).stdout.trim()).toBe("ok");
  });

  it("publishes and receives through it", async () => {
    const client = api(url, await issuer.token());
    const topic = uniqueName("image");
    const published = await client.publish(topic, "hello from the image", {
      "content-type": "text/plain",
    });
    expect(published.status).toBe(201);
    const { messageId } = (await published.json()) as { messageId: string };
    const received = await client.receive(topic, "workers");
    expect(received.status).toBe(200);
    const [part] = await parts(received);
    expect(part?.body.toString()).toBe("hello from the image");
    expect(part?.headers.get("vqs-message-id")).toBe(messageId);
    const handle = part?.headers.get("vqs-receipt-handle") ?? "";
    expect((await client.ack(topic, "workers", handle)).status).toBe(204);
  });

  it("runs the vqs tool: on PATH, with npx without a registry, and against the gateway", async () => {
    const run = (args: string[]) =>
      podman(base, ["run", "--rm", ...RUNTIME, "--network", "none", image, ...args]);
    const help = await run(["vqs", "--help"]);
    expect(help.stdout).toContain("triggers");
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    // npx finds it on PATH from any folder but /app (where it would link the image's own
    // package into its cache, and uid 1000 may not chmod the root-owned dist/cli/main.js).
    const npx = await podman(base, [
      "run",
      "--rm",
      ...RUNTIME,
      "--network",
      "none",
      "--workdir",
      "/tmp",
      image,
      ...["npx", "vqs", "--version"],
    ]);
    expect(npx.stdout.trim()).toBe(pkg.version);

    // As an operator runs it: the app's vercel.json mounted, against the gateway above. The
    // folder is readable by the image's uid 1000 (mkdtemp's is not).
    const appDir = join(work, "app");
    await mkdir(appDir, { mode: 0o755 });
    await chmod(appDir, 0o755);
    await writeFile(
      join(appDir, "vercel.json"),
      JSON.stringify({
        functions: {
          "app/api/orders/route.ts": {
            experimentalTriggers: [{ type: "queue/v2beta", topic: "orders" }],
          },
        },
      }),
    );
    const sync = await exec("podman", [
      ...base.storageArgs,
      "run",
      "--rm",
      ...RUNTIME,
      "--network",
      "host",
      "--read-only",
      "--volume",
      `${appDir}:/work:ro`,
      "--workdir",
      "/work",
      "--env",
      `VQS_URL=${url}`,
      "--env",
      `VQS_TOKEN=${await issuer.token()}`,
      image,
      // Dry run: this gateway has no push allow-list (production), so a real PUT is a 403.
      ...["vqs", "triggers", "sync", "--app-url", "http://orders.svc", "--dry-run", "--json"],
    ]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(JSON.parse(sync.stdout)).toEqual([
      expect.objectContaining({
        action: "created",
        consumerGroup: "app_Sapi_Sorders_Sroute_Dts",
        url: "http://orders.svc/api/orders",
      }),
    ]);
  });

  it("passes its HEALTHCHECK", async () => {
    await podman(base, ["healthcheck", "run", container]);
    const state = await podman(base, ["inspect", "--format", "{{json .State.Health}}", container]);
    expect((JSON.parse(state.stdout) as { Status: string }).Status).toBe("healthy");
  });

  it("stops on SIGTERM within the grace, readiness false first, the drain logged", async () => {
    const started = Date.now();
    // podman stop: SIGTERM, and SIGKILL only after more than the application's grace.
    const stop = exec("podman", [
      ...base.storageArgs,
      "stop",
      "--time",
      String(GRACE_SECONDS + 15),
      container,
    ]);
    let stopped = false;
    void stop.finally(() => (stopped = true));
    const seen = new Set<number>();
    while (!stopped) {
      seen.add(await readyz());
      await sleep(100);
    }
    expect((await stop).code).toBe(0);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(GRACE_SECONDS * 1000);
    expect(seen.has(503)).toBe(true); // during the drain delay, before the listener closed
    const state = await podman(base, ["inspect", "--format", "{{.State.ExitCode}}", container]);
    expect(state.stdout.trim()).toBe("0"); // 137 would mean podman had to kill it

    const messages = (await logs())
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { msg: string; signal?: string });
    const order = [
      "shutting down",
      "shutdown: readiness is now false",
      "shutdown: requests finished, NATS drained",
    ].map((msg) => messages.findIndex((m) => m.msg === msg));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(messages[order[0]!]?.signal).toBe("SIGTERM");
    console.log(`SIGTERM to exit: ${elapsed} ms (grace ${GRACE_SECONDS} s)`);
  }, 60_000);
});

// The nemesis's gateways: each its own process (src/dev/gateway-process.ts) in its own namespace
// of the lab, so it can be paused (SIGSTOP) or cut off alone, with a wall clock that can be
// stepped while it runs: libfaketime (Debian's) is preloaded and reads the offset from a file
// (re-read every second), like a host whose NTP steps its clock. Monotonic clocks stay true, as
// they do under a real step; Node's timers run on those.
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../../../src/config.js";
import { startGatewayProcess, type GatewayProcess } from "../../../src/dev/spawn-gateway.js";
import type { Lab } from "./lab.js";

export const GATEWAY_HOSTS = ["g0", "g1"] as const;
const PORT = 8080;
export const LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
export const RECEIPT_SECRET = "nemesis-receipt-secret-0123456789abcdef";

export interface NemesisGateway {
  readonly host: string;
  readonly url: string;
  /** Null while killed. */
  process: GatewayProcess | null;
  /** Steps this gateway's wall clock to `offsetMs` from the true time (0: true again). */
  skew(offsetMs: number): Promise<void>;
  readonly skewable: boolean;
  pause(): void;
  resume(): void;
  kill(): Promise<void>;
  restart(): Promise<void>;
}

export interface GatewaysOptions {
  readonly dir: string;
  readonly natsUrls: readonly string[];
  readonly jwksUrl: string;
  readonly issuer: string;
  readonly audience: string;
  /** Extra settings (short ack wait, request timeout...). */
  readonly env: Record<string, string>;
  /** Settings the environment does not give (spawn-gateway.ts's `options`). */
  readonly options?: Partial<Config>;
}

export async function startGateways(lab: Lab, o: GatewaysOptions): Promise<NemesisGateway[]> {
  const skewable = existsSync(LIBFAKETIME);
  const out: NemesisGateway[] = [];
  try {
    for (const host of GATEWAY_HOSTS) out.push(await startOne(lab, o, host, skewable));
  } catch (err) {
    for (const g of out) await g.kill();
    throw err;
  }
  return out;
}

async function startOne(
  lab: Lab,
  o: GatewaysOptions,
  host: string,
  skewable: boolean,
): Promise<NemesisGateway> {
  const clockFile = join(o.dir, `${host}.faketime`);
  await writeFile(clockFile, "+0\n");
  const env: Record<string, string> = {
    PORT: String(PORT),
    HOST: lab.address(host),
    NATS_URL: o.natsUrls.join(","),
    VQS_REGION: "iad1",
    VQS_OIDC_JWKS_URL: o.jwksUrl,
    VQS_OIDC_ISSUER: o.issuer,
    VQS_OIDC_AUDIENCE: o.audience,
    VQS_RECEIPT_SECRET: RECEIPT_SECRET,
    LOG_LEVEL: "warn",
    ...(skewable
      ? {
          LD_PRELOAD: LIBFAKETIME,
          FAKETIME_TIMESTAMP_FILE: clockFile,
          FAKETIME_CACHE_DURATION: "1",
          FAKETIME_DONT_FAKE_MONOTONIC: "1",
        }
      : {}),
    ...o.env,
  };
  const start = () =>
    startGatewayProcess({
      env,
      ...(o.options ? { options: o.options } : {}),
      logFile: join(o.dir, `${host}.log`),
      wrapper: lab.wrapper(host),
    });
  const gw: NemesisGateway = {
    host,
    url: `http://${lab.address(host)}:${PORT}`,
    process: await start(),
    skewable,
    async skew(offsetMs) {
      if (!skewable) throw new Error(`no libfaketime at ${LIBFAKETIME}`);
      const s = Math.round(offsetMs / 1000);
      await writeFile(clockFile, `${s >= 0 ? "+" : ""}${s}\n`);
    },
    pause: () => gw.process?.pause(),
    resume: () => gw.process?.resume(),
    async kill() {
      await gw.process?.kill();
      gw.process = null;
    },
    async restart() {
      gw.process = await start();
    },
  };
  return gw;
}

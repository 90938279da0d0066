// A gateway in a process of its own (`src/main.ts`, configured like production), for tests that
// must SIGKILL or SIGSTOP a gateway. One process (`node --import tsx`), not the tsx CLI, which
// runs the program in a child: a signal must hit the gateway itself.
import { spawn, type ChildProcess } from "node:child_process";
import { RECEIPT_SECRET } from "../gateway.js";
import { AUDIENCE, ISSUER, type TestIssuer } from "../issuer.js";

export interface GatewayProcess {
  readonly url: string;
  /** Its Prometheus exposition (GET /metrics on the metrics port). */
  readonly metricsUrl: string;
  readonly child: ChildProcess;
  /** SIGKILL: a crash. */
  kill(): void;
}

const started = new Set<ChildProcess>();

export async function spawnGateway(
  natsUrl: string,
  issuer: TestIssuer,
  env: Record<string, string> = {},
  /** Node's own flags (those NODE_OPTIONS refuses, such as --cpu-prof). */
  nodeArgs: readonly string[] = [],
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "src/main.ts"], {
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: "0",
      VQS_METRICS_PORT: "0",
      HOST: "127.0.0.1",
      NATS_URL: natsUrl,
      VQS_REGION: "iad1",
      VQS_OIDC_JWKS_URL: issuer.jwksUrl,
      VQS_OIDC_ISSUER: ISSUER,
      VQS_OIDC_AUDIENCE: AUDIENCE,
      VQS_RECEIPT_SECRET: RECEIPT_SECRET,
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  child.once("exit", () => started.delete(child));
  const urls = await new Promise<{ url: string; metricsUrl: string }>((resolve, reject) => {
    // Output is kept only until the gateway says where it listens: after that it is read and
    // dropped (the pipe must not fill), never searched again. Kept and searched, it cost the
    // test or bench process time that grew with every log line (a request logs two at info).
    let out = "";
    let listening = false;
    // A bound, not a wait: a gateway is taken as soon as it listens. At load 15-20 on 2 cores a
    // start (tsx compiling src) took over 20 s.
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), 60_000);
    child.stdout.on("data", (chunk: Buffer) => {
      if (listening) return;
      out += chunk.toString();
      const m = /"address":"(http:\/\/127\.0\.0\.1:\d+)","metrics":"([^"]+)"/.exec(out);
      if (m) {
        listening = true;
        out = "";
        clearTimeout(timer);
        resolve({ url: m[1]!, metricsUrl: m[2]! });
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (!listening) out += chunk.toString();
    });
    child.once("exit", () => reject(new Error(`gateway exited:\n${out}`)));
  });
  return { ...urls, child, kill: () => void child.kill("SIGKILL") };
}

/** SIGKILLs every gateway process still running (for afterAll). */
export function killGatewayProcesses(): void {
  for (const c of started) c.kill("SIGKILL");
}

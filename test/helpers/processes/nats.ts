// A real nats-server for a test file: random port, its own temporary store directory.
import { accessSync, constants, existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServerProcess } from "../../../src/dev/nats-server-process.js";

export interface TestNats extends NatsServerProcess {
  /** Stops the server and removes its store. */
  dispose(): Promise<void>;
}

/**
 * A current nats-server (2.11+) for what the distribution's package lacks (per-message TTL):
 * $NATS_SERVER_CURRENT_BIN, else what `scripts/ensure-current-nats.mjs` (run by `npm test`)
 * fetched into .cache/. Fails with the way to get one, never skips.
 */
export function currentNatsServerBinary(): string {
  const bin =
    process.env.NATS_SERVER_CURRENT_BIN ??
    fileURLToPath(new URL("../../../.cache/nats-current/nats-server", import.meta.url));
  if (!existsSync(bin)) {
    throw new Error(
      `no current nats-server at ${bin}: run \`node scripts/ensure-current-nats.mjs\` (as root ` +
        "on Debian/Ubuntu) or set NATS_SERVER_CURRENT_BIN to a nats-server >= 2.11",
    );
  }
  return bin;
}

/**
 * A directory in memory (/dev/shm) when the machine has a writable one, else tmpdir(): for a test
 * that creates and deletes thousands of streams or files, whose cost on the disk would measure
 * the disk rather than vqs.
 */
export function memoryTmpDir(): string {
  try {
    accessSync("/dev/shm", constants.W_OK);
    return "/dev/shm";
  } catch {
    return tmpdir();
  }
}

export async function startTestNats(
  options: { bin?: string; maxFileStore?: number; maxPayload?: number; tmpDir?: string } = {},
): Promise<TestNats> {
  const { tmpDir, ...rest } = options;
  const dir = await mkdtemp(join(tmpDir ?? tmpdir(), "vqs-nats-"));
  const server = await startNatsServer({ storeDir: join(dir, "store"), ...rest });
  return {
    ...server,
    async dispose() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// A real nats-server for a test file: random port, its own temporary store directory.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServerProcess } from "../../src/dev/nats-server-process.js";

export interface TestNats extends NatsServerProcess {
  /** Stops the server and removes its store. */
  dispose(): Promise<void>;
}

export async function startTestNats(): Promise<TestNats> {
  const dir = await mkdtemp(join(tmpdir(), "vqs-nats-"));
  const server = await startNatsServer({ storeDir: join(dir, "store") });
  return {
    ...server,
    async dispose() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

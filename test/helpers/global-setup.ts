// Fails the run at once, with the install command, when there is no nats-server to test against.
// The suite runs on two servers (vitest.config.ts): the distribution's and a current one.
import { existsSync } from "node:fs";
import {
  INSTALL_HINT,
  natsServerBinary,
  natsServerVersion,
} from "../../src/dev/nats-server-process.js";

export default function setup(): void {
  const bin = natsServerBinary();
  if (!bin) throw new Error(INSTALL_HINT);
  const current = process.env.NATS_SERVER_CURRENT_BIN ?? ".cache/nats-current/nats-server";
  if (!existsSync(current)) {
    throw new Error(
      `no current nats-server at ${current}: run \`node scripts/ensure-current-nats.mjs\` (as ` +
        "root on Debian/Ubuntu; `npm test` does) or set NATS_SERVER_CURRENT_BIN to nats-server >= 2.11",
    );
  }
  process.stdout.write(
    `testing against nats-server ${natsServerVersion(bin)} (${bin}) and ` +
      `${natsServerVersion(current)} (${current})\n`,
  );
}

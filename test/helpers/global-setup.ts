// Fails the run at once, with the way to get one, when a nats-server to test against is missing.
// The suite runs on two servers (vitest.config.ts): a current one (the main lane) and the
// distribution's (the compatibility lane).
import { existsSync } from "node:fs";
import {
  distributionNatsServerBinary,
  INSTALL_HINT,
  natsServerVersion,
} from "../../src/dev/nats-server-process.js";

export default function setup(): void {
  const compat = process.env.NATS_SERVER_COMPAT_BIN ?? distributionNatsServerBinary();
  if (!compat) throw new Error(INSTALL_HINT);
  const current = process.env.NATS_SERVER_CURRENT_BIN ?? ".cache/nats-current/nats-server";
  if (!existsSync(current)) {
    throw new Error(
      `no current nats-server at ${current}: run \`node scripts/ensure-current-nats.mjs\` (as ` +
        "root on Debian/Ubuntu; `npm test` does) or set NATS_SERVER_CURRENT_BIN to nats-server >= 2.11",
    );
  }
  process.stdout.write(
    `testing against nats-server ${natsServerVersion(current)} (${current}), and ` +
      `${natsServerVersion(compat)} (${compat}) for compatibility\n`,
  );
}

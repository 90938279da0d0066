// Fails the run at once, with the way to get one, when a nats-server to test against is missing.
// The suite runs on three servers (vitest.config.ts): a current one (the main lane), the
// distribution's 2.9 and Debian trixie's 2.10 (the compatibility lanes). The quick lane
// (test/unit/, the in-memory contracts) needs none and runs without this setup.
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
  const v210 = process.env.NATS_SERVER_210_BIN ?? ".cache/nats-2.10/nats-server";
  if (!existsSync(v210)) {
    throw new Error(
      `no nats-server 2.10 at ${v210}: run \`node scripts/ensure-nats-2.10.mjs\` (as root on ` +
        "Debian/Ubuntu; `npm test` does) or set NATS_SERVER_210_BIN to a nats-server 2.10",
    );
  }
  process.stdout.write(
    `testing against nats-server ${natsServerVersion(current)} (${current}), and ` +
      `${natsServerVersion(compat)} (${compat}) and ${natsServerVersion(v210)} (${v210}) for ` +
      "compatibility\n",
  );
}

// Fails the run at once, with the install command, when there is no nats-server to test against.
import {
  INSTALL_HINT,
  natsServerBinary,
  natsServerVersion,
} from "../../src/dev/nats-server-process.js";

export default function setup(): void {
  const bin = natsServerBinary();
  if (!bin) throw new Error(INSTALL_HINT);
  process.stdout.write(`testing against nats-server ${natsServerVersion(bin)} (${bin})\n`);
}

// The nemesis's network: one network namespace per host (the nats-server nodes and the gateways),
// each with its own address on a bridge that has no uplink, so a partition can cut exactly the
// links between named hosts. Cuts are iptables DROP rules inside the namespaces (what Jepsen
// does: silent loss, not a refused connection). The test process stays in the root namespace on
// the bridge's address and reaches every host throughout: it is the observer, never cut off.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Where running labs are recorded (pid and names), so a crashed run's leftovers get removed. */
const REGISTRY = "/run/vqs-nemesis";

export interface Lab {
  readonly id: string;
  /** The bridge's address: the test process (issuer, clients, inspection). */
  readonly hostAddress: string;
  address(host: string): string;
  /** The command prefix that runs a program inside a host's namespace. */
  wrapper(host: string): string[];
  /** Cuts every link between hosts of different blocks; hosts in no block keep all links. */
  partition(blocks: readonly (readonly string[])[]): Promise<void>;
  /** Removes every cut. */
  heal(): Promise<void>;
  dispose(): Promise<void>;
}

async function sh(cmd: string, ...args: string[]): Promise<void> {
  try {
    await run(cmd, args);
  } catch (err) {
    const e = err as { stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")}: ${e.stderr ?? String(err)}`);
  }
}

/** A /24 under 10.213.0.0/16 that no interface of this machine uses yet. */
async function freeSubnet(): Promise<string> {
  const { stdout } = await run("ip", ["-4", "-o", "addr"]);
  for (let tries = 0; tries < 200; tries++) {
    const k = Math.floor(Math.random() * 250) + 1;
    if (!stdout.includes(`10.213.${k}.`)) return `10.213.${k}`;
  }
  throw new Error("no free 10.213.x.0/24 subnet for the nemesis lab");
}

/** Removes labs whose process is gone (a killed test run leaves namespaces and mounts behind). */
export async function removeStaleLabs(): Promise<void> {
  if (!existsSync(REGISTRY)) return;
  for (const f of await readdir(REGISTRY)) {
    const entry = JSON.parse(await readFile(`${REGISTRY}/${f}`, "utf8")) as LabRecord;
    let alive = true;
    try {
      process.kill(entry.pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) await teardown(entry);
  }
}

interface LabRecord {
  readonly id: string;
  readonly pid: number;
  readonly bridge: string;
  readonly namespaces: string[];
  readonly mounts: string[];
}

async function teardown(r: LabRecord): Promise<void> {
  for (const ns of r.namespaces) await sh("ip", "netns", "del", ns).catch(() => undefined);
  await sh("ip", "link", "del", r.bridge).catch(() => undefined);
  for (const m of r.mounts) await sh("umount", "-l", m).catch(() => undefined);
  await rm(`${REGISTRY}/${r.id}.json`, { force: true });
}

/** Registers a mount point to unmount with the lab (also after a crash). */
export async function recordMount(lab: Lab, mountPoint: string): Promise<void> {
  const file = `${REGISTRY}/${lab.id}.json`;
  const r = JSON.parse(await readFile(file, "utf8")) as LabRecord;
  r.mounts.push(mountPoint);
  await writeFile(file, JSON.stringify(r));
}

/** Creates the bridge and one namespace per host (addresses .11, .12, ... in the order given). */
export async function createLab(hosts: readonly string[]): Promise<Lab> {
  await removeStaleLabs();
  const id = Math.floor(Math.random() * 0xffff)
    .toString(16)
    .padStart(4, "0");
  const subnet = await freeSubnet();
  const bridge = `vq${id}br`;
  const ns = (host: string) => `vqs-${id}-${host}`;
  const addresses = new Map(hosts.map((h, i) => [h, `${subnet}.${11 + i}`]));
  const record: LabRecord = {
    id,
    pid: process.pid,
    bridge,
    namespaces: hosts.map(ns),
    mounts: [],
  };
  await mkdir(REGISTRY, { recursive: true });
  await writeFile(`${REGISTRY}/${id}.json`, JSON.stringify(record));
  try {
    await sh("ip", "link", "add", bridge, "type", "bridge");
    await sh("ip", "addr", "add", `${subnet}.1/24`, "dev", bridge);
    await sh("ip", "link", "set", bridge, "up");
    for (const [i, host] of hosts.entries()) {
      const veth = `vq${id}${i}`;
      await sh("ip", "netns", "add", ns(host));
      await sh("ip", "-n", ns(host), "link", "set", "lo", "up");
      await sh(
        "ip",
        "link",
        "add",
        veth,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        ns(host),
      );
      await sh("ip", "link", "set", veth, "master", bridge);
      await sh("ip", "link", "set", veth, "up");
      await sh("ip", "-n", ns(host), "addr", "add", `${addresses.get(host)!}/24`, "dev", "eth0");
      await sh("ip", "-n", ns(host), "link", "set", "eth0", "up");
    }
  } catch (err) {
    await teardown(record);
    throw err;
  }
  const inNs = (host: string, ...args: string[]) =>
    sh("ip", "netns", "exec", ns(host), "iptables", "-w", ...args);
  const lab: Lab = {
    id,
    hostAddress: `${subnet}.1`,
    address(host) {
      const a = addresses.get(host);
      if (!a) throw new Error(`no host ${host} in the lab`);
      return a;
    },
    wrapper: (host) => ["nsenter", `--net=/run/netns/${ns(host)}`],
    async partition(blocks) {
      await lab.heal();
      for (const [i, a] of blocks.entries()) {
        for (const [j, b] of blocks.entries()) {
          if (i === j) continue;
          // Each side drops what arrives from the other: both directions are cut.
          for (const x of a)
            for (const y of b) await inNs(x, "-A", "INPUT", "-s", lab.address(y), "-j", "DROP");
        }
      }
    },
    async heal() {
      for (const host of hosts) await inNs(host, "-F", "INPUT");
    },
    dispose: async () => {
      const current = JSON.parse(
        await readFile(`${REGISTRY}/${id}.json`, "utf8").catch(() => JSON.stringify(record)),
      ) as LabRecord;
      await teardown(current);
    },
  };
  return lab;
}

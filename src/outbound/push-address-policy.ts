// Which addresses a push may connect to. A push URL names a host the operator allowed; when that
// host is a name, DNS says where it goes, and whoever controls the name's DNS could point it
// at the gateway's own network (a rebinding name answers a public address first and an internal
// one later). So the name is resolved once per connection by the lookup below, every address it
// answers is checked, and the socket connects to an address that was checked: Node's net calls
// this lookup instead of its own and connects only to what it returns, and undici still sends
// the URL's host name as TLS SNI and Host. Private, loopback, link-local and other special-use
// ranges (IPv4, IPv6, and IPv4 inside IPv6) are refused unless the operator allows a range
// (VQS_PUSH_ALLOWED_PRIVATE_NETWORKS). A host written as an IP address in an allow-list entry is
// not resolved: the operator named that address itself, and nothing can rebind it.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

/** Special-use ranges no push reaches unless allowed (RFC 6890 and its IPv6 counterparts). */
const SPECIAL_RANGES = [
  "0.0.0.0/8", // "this network"
  "10.0.0.0/8",
  "100.64.0.0/10", // carrier-grade NAT
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local, cloud metadata
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15", // benchmarking
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, broadcast
  "::/128",
  "::1/128",
  "::/96", // IPv4-compatible (deprecated)
  "64:ff9b::/96", // NAT64: an IPv4 address behind a translator
  "64:ff9b:1::/48",
  "100::/64", // discard
  "2001::/32", // Teredo
  "2002::/16", // 6to4
  "fc00::/7", // unique local
  "fe80::/10", // link-local
  "fec0::/10", // site-local (deprecated)
  "ff00::/8", // multicast
] as const;

export interface Cidr {
  readonly address: string;
  readonly prefix: number;
  readonly type: "ipv4" | "ipv6";
}

/** `10.0.0.0/8`, `fd00::/8`; null when it is not one. */
export function parseCidr(text: string): Cidr | null {
  const m = /^([0-9A-Fa-f:.]+)\/(\d{1,3})$/.exec(text);
  const family = m ? isIP(m[1]!) : 0;
  if (!m || family === 0) return null;
  const prefix = Number(m[2]);
  if (prefix > (family === 4 ? 32 : 128)) return null;
  return { address: m[1]!, prefix, type: family === 4 ? "ipv4" : "ipv6" };
}

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (!c) throw new Error(`not a CIDR range: ${text}`);
    list.addSubnet(c.address, c.prefix, c.type);
  }
  return list;
}

/** An IPv4 address inside IPv6 (`::ffff:10.0.0.1`, however written) as IPv4; else as it is. */
function unmapped(address: string): string {
  if (isIP(address) !== 6) return address;
  // The URL parser writes IPv6 one way: lowercase hex, the longest zero run as `::`.
  const host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!m) return host;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export class PushAddressPolicy {
  readonly #special = blockList(SPECIAL_RANGES);
  readonly #allowed: BlockList;

  /** `allowedPrivateNetworks`: CIDR ranges a push may reach although special. */
  constructor(allowedPrivateNetworks: readonly string[]) {
    this.#allowed = blockList(allowedPrivateNetworks);
  }

  /** Whether a push may connect to `address` (an IP address, as DNS answers one). */
  allows(address: string): boolean {
    const a = unmapped(address);
    const family = isIP(a);
    if (family === 0) return false;
    const type = family === 4 ? "ipv4" : "ipv6";
    return !this.#special.check(a, type) || this.#allowed.check(a, type);
  }
}

/** The error a refused destination fails its connection with (its code is how it is told). */
export class PushAddressRefused extends Error {
  readonly code = PUSH_ADDRESS_REFUSED;
  constructor(hostname: string) {
    super(`push destination ${hostname} resolves to an address this service does not push to`);
  }
}

export const PUSH_ADDRESS_REFUSED = "VQS_PUSH_ADDRESS_REFUSED";

/** Resolves a name to all its addresses (dns.lookup, the system resolver, by default). */
export type PushResolver = (
  hostname: string,
  family: number,
  callback: (err: NodeJS.ErrnoException | null, addresses: readonly LookupAddress[]) => void,
) => void;

const systemResolver: PushResolver = (hostname, family, callback) =>
  dnsLookup(hostname, { all: true, family }, (err, addresses) => callback(err, addresses ?? []));

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net.connect / tls.connect: resolves once, refuses the name when any address
 * it has is not allowed (a name that answers both kinds is not a push destination), and hands
 * back only the checked addresses, to which the socket then connects.
 */
export function checkedLookup(
  policy: PushAddressPolicy,
  resolve: PushResolver = systemResolver,
): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  return (hostname, options, callback) => {
    const family = typeof options.family === "number" ? options.family : 0;
    resolve(hostname, family, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0 || !addresses.every((a) => policy.allows(a.address))) {
        return callback(new PushAddressRefused(hostname), []);
      }
      if (options.all) return callback(null, [...addresses]);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

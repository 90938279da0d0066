// The store ports as the queue's services see them, with the fair share (fair-share.ts) in front
// of the operations a tenant's requests send toward the store: each of those calls takes a slot
// of its tenant (the first argument's namespace) for its duration. Every other method is the
// store's own, unchanged: acknowledging, extending, the ledgers that follow a delivery, and what
// the pusher and the gateway's own loops do. A gated call never makes another (the store does
// not see these wrappers), so slots are never held while waiting for a slot.
import type { Broker } from "../../broker.js";
import type { Namespace, TopicAddress } from "../../namespace.js";
import type { QueueAdmin } from "../../management/queue-admin.js";
import type { FairShare } from "./fair-share.js";
import { tenantKeyOf } from "../tenant.js";

/** Publishes (single, batch parts, dead-letter copies), receive pulls, receive by ID, peeks. */
const BROKER_GATED = [
  "publish",
  "pull",
  "lookup",
  "readTopic",
] as const satisfies readonly (keyof Broker)[];

/** The management reads and changes that name a namespace (the region's listing does not). */
const ADMIN_GATED = [
  "topicNames",
  "topic",
  "groups",
  "positionAt",
  "deleteTopic",
  "purgeTopic",
  "deleteGroup",
  "seekGroup",
  "namespaceBytes",
  "deadLettered",
  "pushHealth",
] as const satisfies readonly (keyof QueueAdmin)[];

export function fairBroker(broker: Broker, share: FairShare): Broker {
  return gated(broker, share, BROKER_GATED);
}

export function fairAdmin(admin: QueueAdmin, share: FairShare): QueueAdmin {
  return gated(admin, share, ADMIN_GATED);
}

/** The tenant of a port call's first argument: a topic or group address, or a namespace. */
function tenantOfArgument(arg: unknown): string {
  const a = arg as Partial<TopicAddress> & Partial<Namespace>;
  return tenantKeyOf(a.namespace?.key ?? a.key ?? "");
}

/** `target` with `methods` run in the fair share; its other members bound to it as they are. */
function gated<T extends object>(target: T, share: FairShare, methods: readonly (keyof T)[]): T {
  const own = new Map<PropertyKey, unknown>();
  for (const name of methods) {
    const method = target[name] as (...args: unknown[]) => Promise<unknown>;
    own.set(name, (...args: unknown[]) =>
      share.run(tenantOfArgument(args[0]), () => method.apply(target, args)),
    );
  }
  return new Proxy(target, {
    get(t, name) {
      let v = own.get(name);
      if (v !== undefined) return v;
      v = Reflect.get(t, name, t);
      if (typeof v !== "function") return v;
      const bound = (v as (...args: unknown[]) => unknown).bind(t);
      own.set(name, bound);
      return bound;
    },
  });
}

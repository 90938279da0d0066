// What the queue's use cases (publish, large bodies, receive, receive by ID, leases, redrive)
// share: the storage port, the keys, the clock, and the one instance each of the delivery rules
// they all apply. The composition root makes it once and hands the pusher the parts it needs
// (`handOut`, `acks`), so a push is handed out and acknowledged as a receive is.
import type { Broker } from "../broker.js";
import type { BodyStore } from "../bodies.js";
import { GroupAcks } from "../delivery/group-acks.js";
import { GroupLeases } from "../delivery/group-leases.js";
import { HandOut } from "../delivery/hand-out.js";
import { MessageCopies } from "../delivery/message-copies.js";
import { FlowGate } from "../flow-control/flow-gate.js";
import { IdLeases } from "../id-leases.js";
import type { SecretKeys } from "../identity/secret-keys.js";
import { LongPolls } from "../long-polls.js";
import type { GroupAddress } from "../namespace.js";
import { NO_OBSERVER, type QueueObserver } from "../observer.js";
import type { ConsumerSettings } from "../settings/consumer-settings.js";
import type { Logger } from "../../logger.js";

export interface QueueContextDeps {
  readonly broker: Broker;
  readonly keys: SecretKeys;
  readonly now: () => number;
  readonly observer?: QueueObserver;
  /** A group's effective settings (push, retry, dead letters), from memory; null: none. */
  readonly settingsOf?: (group: GroupAddress) => ConsumerSettings | null;
  /** Where failures that reach no client are told (dead-lettering that must be retried). */
  readonly log?: Pick<Logger, "warn">;
  /** Where bodies above the inline limit are kept; without it they are refused. */
  readonly bodies?: BodyStore;
}

export interface QueueContext {
  readonly broker: Broker;
  readonly keys: SecretKeys;
  readonly now: () => number;
  readonly observer: QueueObserver;
  readonly settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly bodies: BodyStore | null;
  readonly idLeases: IdLeases;
  readonly groupLeases: GroupLeases;
  readonly copies: MessageCopies;
  /** Hands pulled deliveries out: a receive's, and the pusher's. */
  readonly handOut: HandOut;
  /** Acknowledges through a lease: an acknowledgement's, and the pusher's `autoAck`. */
  readonly acks: GroupAcks;
  /** This gateway's waiting receives; a publish here wakes those that found no topic. */
  readonly longPolls: LongPolls;
  /** Flow control per key: slots, and the deliveries held here over their key's limit. */
  readonly flow: FlowGate;
}

export function createQueueContext(deps: QueueContextDeps): QueueContext {
  const { broker, keys, now } = deps;
  const observer = deps.observer ?? NO_OBSERVER;
  const settingsOf = deps.settingsOf ?? (() => null);
  const bodies = deps.bodies ?? null;
  const idLeases = new IdLeases(broker, now);
  const copies = new MessageCopies({ broker, bodies, now });
  const flow = new FlowGate({ broker, now, settingsOf, log: deps.log ?? null });
  return {
    broker,
    keys,
    now,
    observer,
    settingsOf,
    bodies,
    idLeases,
    groupLeases: new GroupLeases(broker, idLeases, now, flow),
    copies,
    handOut: new HandOut({
      broker,
      keys,
      now,
      observer,
      idLeases,
      copies,
      settingsOf,
      log: deps.log ?? null,
    }),
    acks: new GroupAcks({ broker, idLeases, now, observer, flow }),
    longPolls: new LongPolls(broker, now),
    flow,
  };
}

// What the queue's use cases (publish, large bodies, receive, receive by ID, leases, redrive)
// share: the storage port, the keys, the clock, and the one instance each of the delivery rules
// they all apply. The composition root makes it once and hands the pusher the parts it needs
// (`handOut`, `acks`), so a push is handed out and acknowledged as a receive is.
import type { Broker, CutLeaseLog, FlowSlotLedger } from "../broker.js";
import { IdLeaseLedger } from "../ledgers/id-lease-ledger.js";
import { LeaseLedger } from "../ledgers/lease-ledger.js";
import { PushLedger } from "../ledgers/push-ledger.js";
import type { RecordStore } from "../records/record-store.js";
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
  /** The records the ledgers keep (lease, by-ID lease and push records). */
  readonly records: RecordStore;
  /** Leases cut short through their handle, as every gateway knows them. */
  readonly cuts: CutLeaseLog;
  /** Flow control's per-key slot records, shared by every gateway of the region. */
  readonly flowSlots: FlowSlotLedger;
  /**
   * How long a group's new "uses receive by ID" mark waits before it counts, so that every other
   * gateway's cached "no" has run out (0 where there is no other gateway, as in the twins).
   */
  readonly idLeaseMarkWaitMs: number;
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
  /** Current deliveries, bounces at the concurrency limit, dead-letter counts. */
  readonly leaseLedger: LeaseLedger;
  /** ID leases, the cursor's leases of groups that use them, and the groups' marks. */
  readonly idLedger: IdLeaseLedger;
  readonly idLeases: IdLeases;
  readonly groupLeases: GroupLeases;
  /** Holdbacks and handler leases of pushed groups (the pusher's, and a lease change's). */
  readonly pushLedger: PushLedger;
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
  const leaseLedger = new LeaseLedger(deps.records);
  const idLedger = new IdLeaseLedger(deps.records, { now, markWaitMs: deps.idLeaseMarkWaitMs });
  const idLeases = new IdLeases(broker, idLedger, leaseLedger, now);
  const copies = new MessageCopies({ broker, bodies, now });
  const pushLedger = new PushLedger(deps.records);
  const flow = new FlowGate({
    broker,
    slots: deps.flowSlots,
    holdbacks: pushLedger,
    now,
    settingsOf,
    log: deps.log ?? null,
  });
  return {
    broker,
    keys,
    now,
    observer,
    settingsOf,
    bodies,
    leaseLedger,
    idLedger,
    idLeases,
    groupLeases: new GroupLeases(broker, deps.cuts, idLeases, now, flow),
    pushLedger,
    copies,
    handOut: new HandOut({
      broker,
      leases: leaseLedger,
      idLedger,
      keys,
      now,
      observer,
      idLeases,
      copies,
      settingsOf,
      log: deps.log ?? null,
      flow,
    }),
    acks: new GroupAcks({
      broker,
      leases: leaseLedger,
      cuts: deps.cuts,
      idLeases,
      now,
      observer,
      flow,
    }),
    longPolls: new LongPolls(broker, now),
    flow,
  };
}

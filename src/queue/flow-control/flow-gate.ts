// Flow control on the receive path, per gateway: which pulled deliveries may go now (no key
// header, or their key took a slot, key-slots.ts) and the waitlist of those that may not. A
// delivery over its key's limit is held here, unseen and still leased to this gateway, until a
// slot of its key frees (any gateway's acknowledgement, release or ended lease): the next receive
// of the group here takes it first. It is not released toward another delivery: JetStream
// counts every release as one, and a key's backlog would walk its messages to `maxDeliveries`.
// Only a delivery held longer than half its lease (or past the waitlist's bound) is given back,
// and that release is counted as a holdback (the push path's count) so the delivery count the
// consumer sees does not grow. The same holds for a key without rate room, and for a message of an
// ordered key that is not its head (key-rules.ts). See docs/architecture.md, "Flow control".
import type { Logger } from "../../logger.js";
import type { Broker, Delivery, FlowSlotLedger, StoredMessage } from "../broker.js";
import type { PushLedger } from "../ledgers/push-ledger.js";
import type { GroupAddress } from "../namespace.js";
import type { ConsumerSettings, FlowControlSettings } from "../settings/consumer-settings.js";
import { flowKeyHash } from "./flow-keys.js";
import { gcraTake } from "./gcra.js";
import { keyRulesOf, slotLimit, type KeyRules, type KeyState, type Verdict } from "./key-rules.js";
import { KeySlots } from "./key-slots.js";

/** Deliveries one group may have held on one gateway; more are given back at once. */
export const MAX_HELD_PER_GROUP = 100;
/** Payload bytes all groups may have held on one gateway; more are given back at once. */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;
/** A held delivery is given back after this long at most (or half its lease if shorter). */
export const MAX_HOLD_MS = 10_000;
/** A delivery given back from the waitlist comes back this much later. */
export const HELD_RETRY_MS = 1000;
/** Keys of leases handed out here remembered (an acknowledgement here needs no read). */
const MAX_REMEMBERED_KEYS = 100_000;
/**
 * Ordered: messages looked at before a key's new head on its first sight, for earlier ones of
 * the key another gateway pulled and has not written into the order yet.
 */
export const ORDER_LOOKBACK = 64;
/** Ordered: a head holding no slot is checked for being gone at most this often per gateway. */
export const HEAD_CHECK_MS = 5000;

export interface FlowGateDeps {
  readonly broker: Pick<Broker, "setLease" | "leaseMsOf" | "readTopic" | "groupEpoch" | "progress">;
  /** The per-key slot records, shared by every gateway of the region. */
  readonly slots: FlowSlotLedger;
  /** Where a release from the waitlist is counted as a holdback (the push path's count). */
  readonly holdbacks: Pick<PushLedger, "holdbacks" | "holdBack">;
  readonly now: () => number;
  readonly settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly log: Pick<Logger, "warn"> | null;
}

interface Held {
  readonly d: Delivery;
  readonly keyHash: string;
  /** When it is given back if no slot of its key freed (the service's clock). */
  readonly untilMs: number;
  /** A receive is taking a slot for it: nothing else may take or give it back meanwhile. */
  claimed: boolean;
  /** The group's epoch when held: after a seek its delivery belongs to no current cursor. */
  readonly epoch: number;
}

interface GroupHeld {
  readonly group: GroupAddress;
  /** Oldest pulled first. */
  readonly held: Held[];
}

export class FlowGate {
  readonly #d: FlowGateDeps;
  readonly #slots: KeySlots;
  readonly #groups = new Map<string, GroupHeld>();
  /** The key hash of each lease that took a slot here, by group and stream sequence. */
  readonly #keys = new Map<string, string>();
  /** Ordered heads checked for being gone, and when (group, key and head). */
  readonly #headChecks = new Map<string, number>();
  #sweeper: NodeJS.Timeout | null = null;
  /** Payload bytes held now, all groups. */
  #heldBytes = 0;

  constructor(deps: FlowGateDeps) {
    this.#d = deps;
    this.#slots = new KeySlots(deps.slots, deps.now);
  }

  /** The group's flow control, or null: it has none. */
  flowOf(group: GroupAddress): FlowControlSettings | null {
    return this.#d.settingsOf(group)?.flowControl ?? null;
  }

  /** Whether deliveries of the group are held here (a receive then looks before it waits). */
  holds(group: GroupAddress): boolean {
    return (this.#groups.get(groupKey(group))?.held.length ?? 0) > 0;
  }

  /** Deliveries held on this gateway, all groups (metrics, tests). */
  get heldCount(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += g.held.length;
    return n;
  }

  /** Keys with deliveries held on this gateway, all groups (a metric: no label per key). */
  get waitingKeys(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += new Set(g.held.map((h) => h.keyHash)).size;
    return n;
  }

  /**
   * The delivery counts the consumer sees: a release from the waitlist (a holdback) is no
   * delivery. Only redeliveries need the record read.
   */
  async seenCounts(group: GroupAddress, batch: readonly Delivery[]): Promise<Delivery[]> {
    return Promise.all(
      batch.map(async (d) => {
        if (d.deliveryCount <= 1) return d;
        const held = await this.#d.holdbacks.holdbacks(group, d.streamSeq);
        return held === 0 ? d : { ...d, deliveryCount: Math.max(1, d.deliveryCount - held) };
      }),
    );
  }

  /**
   * Of deliveries that may otherwise be handed out, those that may go now: without a key, or
   * with a slot of their key taken until `deadlineMs`. The others are held here (and named in
   * the answer's `held`, so that nothing releases them meanwhile).
   */
  async admit(
    group: GroupAddress,
    live: readonly Delivery[],
    deadlineMs: number,
  ): Promise<{ readonly pass: Delivery[]; readonly held: Delivery[] }> {
    const flow = this.flowOf(group);
    const rules = keyRulesOf(flow);
    if (flow === null || rules === null || live.length === 0) {
      return { pass: [...live], held: [] };
    }
    const byKey = new Map<string, Delivery[]>();
    const pass: Delivery[] = [];
    for (const d of live) {
      const k = flowKeyHash(d.message, flow);
      if (k === null) pass.push(d);
      else byKey.set(k, [...(byKey.get(k) ?? []), d]);
    }
    const held: Delivery[] = [];
    // Keys in parallel; one key's deliveries in order, so the oldest takes the free slot (an
    // ordered key's first write names all of them, so they wait in its order).
    await Promise.all(
      [...byKey].map(async ([k, unsorted]) => {
        const ds = unsorted.sort((a, b) => a.streamSeq - b.streamSeq);
        let full = false;
        for (const [i, d] of ds.entries()) {
          const seen = rules.ordered ? ds.slice(i + 1).map((x) => x.streamSeq) : [];
          if (!full && (await this.#take(group, k, d, deadlineMs, rules, seen))) pass.push(d);
          else {
            full = true;
            held.push(d);
          }
        }
      }),
    );
    pass.sort((a, b) => a.streamSeq - b.streamSeq);
    for (const d of held.sort((a, b) => a.streamSeq - b.streamSeq)) {
      await this.#hold(group, d, flowKeyHash(d.message, flow)!);
    }
    return { pass, held };
  }

  /**
   * Up to `max` held deliveries of the group whose key has a slot now, oldest first, each taken
   * until `deadlineMs` and leased again for `leaseMs` from now (their lease ran from the pull).
   * Those held too long and still without room are given back after.
   */
  async takeHeld(
    group: GroupAddress,
    max: number,
    deadlineMs: number,
    leaseMs: number,
  ): Promise<Delivery[]> {
    const g = this.#groups.get(groupKey(group));
    const flow = this.flowOf(group);
    if (!g || max <= 0) {
      await this.sweep(group);
      return [];
    }
    // Held before a seek: not taken (the sweep below forgets them).
    const epoch = this.#d.broker.groupEpoch(group);
    const taken: Delivery[] = [];
    const full = new Set<string>();
    // The settings changed since it was held: no limit now, or a different one.
    const rules = keyRulesOf(flow);
    // Oldest first by publish order: an ordered key's head redelivered after a later message
    // of the key was held goes first.
    for (const h of [...g.held].sort((a, b) => a.d.streamSeq - b.d.streamSeq)) {
      if (taken.length >= max) break;
      if (full.has(h.keyHash) || h.claimed || h.epoch !== epoch) continue;
      h.claimed = true;
      if (rules !== null && !(await this.#take(group, h.keyHash, h.d, deadlineMs, rules))) {
        h.claimed = false;
        full.add(h.keyHash);
        continue;
      }
      this.#unhold(g, h);
      try {
        await this.#d.broker.setLease(group, h.d, leaseMs);
      } catch (err) {
        await this.leaseMoved(group, h.d.streamSeq, 0);
        throw err;
      }
      taken.push(h.d);
    }
    // Tried before given back: a key whose room comes as its hold ends takes it at once.
    await this.sweep(group);
    this.#forgetIfEmpty(group);
    return taken;
  }

  /**
   * A lease of the group now ends at `untilMs` (an acknowledgement or a release: now), through
   * any gateway: the slot it holds follows. Never throws: a slot not moved ends with its lease.
   */
  async leaseMoved(group: GroupAddress, streamSeq: number, untilMs: number): Promise<void> {
    try {
      const k = await this.#keyOf(group, streamSeq);
      if (k === null) return;
      await this.#slots.moveUntil(group, k, streamSeq, untilMs);
      if (untilMs <= this.#d.now()) this.#keys.delete(seqKey(group, streamSeq));
    } catch (err) {
      this.#d.log?.warn(
        { err, topic: group.topic, group: group.group, seq: streamSeq },
        "flow control: a slot was not given back; it frees when its lease ends",
      );
    }
  }

  /**
   * A lease of the group is extended to `untilMs` (later than now): false when its slot ran out
   * before and its key has no room now (the extension must be refused: another message of the
   * key is in flight). True for a group or message without a limit.
   */
  async extend(
    group: GroupAddress,
    lease: { readonly streamSeq: number; readonly deliveryCount: number },
    untilMs: number,
  ): Promise<boolean> {
    const flow = this.flowOf(group);
    const rules = keyRulesOf(flow);
    const limit = rules === null ? null : slotLimit(rules);
    if (flow === null || limit === null) return true;
    const k =
      this.#keys.get(seqKey(group, lease.streamSeq)) ??
      (await this.#keyOfSeq(group, lease.streamSeq, flow));
    if (k === null) return true;
    const holder = { streamSeq: lease.streamSeq, deliveryCount: lease.deliveryCount, untilMs };
    return this.#slots.extend(group, k, holder, limit);
  }

  /**
   * Message `streamSeq` of the group settled for good (acknowledged through any gateway,
   * dead-lettered, or expired): its slot frees, and under `ordered` it leaves its key's order, so
   * the key's next message is the head. `message`: its message when at hand (no read). Never
   * throws: a slot not freed ends with its lease; a head left behind is found gone later.
   */
  async settled(group: GroupAddress, streamSeq: number, message?: StoredMessage): Promise<void> {
    try {
      const k = await this.#keyOf(group, streamSeq, message);
      if (k === null) return;
      await this.#slots.settle(group, k, streamSeq, keyRulesOf(this.flowOf(group)));
      this.#keys.delete(seqKey(group, streamSeq));
    } catch (err) {
      this.#d.log?.warn(
        { err, topic: group.topic, group: group.group, seq: streamSeq },
        "flow control: a settled message's slot was not given back; it frees when its lease ends",
      );
    }
  }

  /** Gives back what was held past its time (counted as holdbacks, not deliveries). */
  async sweep(group?: GroupAddress): Promise<void> {
    const now = this.#d.now();
    const groups = group ? [this.#groups.get(groupKey(group))] : [...this.#groups.values()];
    for (const g of groups) {
      if (!g) continue;
      // Held before a seek (or the group's removal): forgotten, its cursor is gone.
      const epoch = this.#d.broker.groupEpoch(g.group);
      for (const h of g.held.filter((h) => h.epoch !== epoch && !h.claimed)) this.#unhold(g, h);
      const due = g.held.filter((h) => h.untilMs <= now && !h.claimed);
      for (const h of due) this.#unhold(g, h);
      await Promise.all(due.map((h) => this.#giveBack(g.group, h.d)));
      this.#forgetIfEmpty(g.group);
    }
  }

  /** Gives back everything held (the gateway stops): counted as holdbacks. */
  async close(): Promise<void> {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
    const all = [...this.#groups.values()];
    this.#groups.clear();
    this.#heldBytes = 0;
    await Promise.all(all.flatMap((g) => g.held.map((h) => this.#giveBack(g.group, h.d))));
  }

  /** One read and one write of the key's record; more only for an ordered key's head changes. */
  async #take(
    group: GroupAddress,
    keyHash: string,
    d: Delivery,
    deadlineMs: number,
    rules: KeyRules,
    seen: readonly number[] = [],
  ): Promise<boolean> {
    return (await this.#admitOne(group, keyHash, d, deadlineMs, rules, seen)).take;
  }

  /** #take's verdict: taken, or why not, on the record as last read. */
  async #admitOne(
    group: GroupAddress,
    keyHash: string,
    d: Delivery,
    deadlineMs: number,
    rules: KeyRules,
    seen: readonly number[],
  ): Promise<Verdict & { readonly read: KeyState }> {
    const holder = { streamSeq: d.streamSeq, deliveryCount: d.deliveryCount, untilMs: deadlineMs };
    let v = await this.#slots.admit(group, keyHash, holder, seen, rules);
    if (!v.take && v.reason === "gap") {
      const earlier = await this.#earlierOfKey(group, keyHash, d.streamSeq, v.read.doneSeq);
      v = await this.#slots.admit(group, keyHash, holder, [...seen, ...earlier], rules, true);
    }
    if (!v.take && v.reason === "order") {
      if (await this.#settleGoneHead(group, keyHash, v.next ?? v.read, rules)) {
        v = await this.#slots.admit(group, keyHash, holder, seen, rules, true);
      }
    }
    if (!v.take) return v;
    if (this.#keys.size >= MAX_REMEMBERED_KEYS) {
      const oldest = this.#keys.keys().next();
      if (!oldest.done) this.#keys.delete(oldest.value);
    }
    this.#keys.set(seqKey(group, d.streamSeq), keyHash);
    return v;
  }

  async #hold(group: GroupAddress, d: Delivery, keyHash: string): Promise<void> {
    const k = groupKey(group);
    let g = this.#groups.get(k);
    if (!g) this.#groups.set(k, (g = { group, held: [] }));
    const bytes = d.message.payload.length;
    if (g.held.length >= MAX_HELD_PER_GROUP || this.#heldBytes + bytes > MAX_HELD_BYTES) {
      this.#forgetIfEmpty(group);
      await this.#giveBack(group, d);
      return;
    }
    this.#heldBytes += bytes;
    const holdMs = Math.min(MAX_HOLD_MS, this.#d.broker.leaseMsOf(group) / 2);
    const epoch = this.#d.broker.groupEpoch(group);
    g.held.push({ d, keyHash, untilMs: this.#d.now() + holdMs, claimed: false, epoch });
    this.#sweepSoon();
  }

  /** Released unseen, the release counted first as a holdback (no delivery for the consumer). */
  async #giveBack(group: GroupAddress, d: Delivery): Promise<void> {
    try {
      await this.#d.holdbacks.holdBack(group, d.streamSeq);
      await this.#d.broker.setLease(group, d, HELD_RETRY_MS);
    } catch (err) {
      this.#d.log?.warn(
        { err, topic: group.topic, group: group.group, seq: d.streamSeq },
        "flow control: a held message was not given back; it comes back when its lease ends",
      );
    }
  }

  /**
   * The key whose slot message `streamSeq` took here, else its key under the group's settings now
   * (read from the message when not at hand); null: none. The one it took comes first: the
   * settings may have changed since (flowControl removed or keyed on another header), and a slot
   * taken under the old ones must still be given back, not left to its lease's end.
   */
  async #keyOf(
    group: GroupAddress,
    streamSeq: number,
    message?: StoredMessage,
  ): Promise<string | null> {
    const taken = this.#keys.get(seqKey(group, streamSeq));
    if (taken !== undefined) return taken;
    const flow = this.flowOf(group);
    if (flow === null) return null;
    return message ? flowKeyHash(message, flow) : this.#keyOfSeq(group, streamSeq, flow);
  }

  /** The key of a lease handed out by another gateway: read from the log (null: none). */
  async #keyOfSeq(
    group: GroupAddress,
    streamSeq: number,
    flow: FlowControlSettings,
  ): Promise<string | null> {
    const [m] = await this.#d.broker.readTopic(group, streamSeq, 1);
    return m && m.streamSeq === streamSeq ? flowKeyHash(m.message, flow) : null;
  }

  /**
   * Messages of the key published within ORDER_LOOKBACK before `streamSeq`, after its last
   * settled one and after the group's acknowledged floor, not expired: pulled by another gateway
   * and not yet in the order, they come first.
   */
  async #earlierOfKey(
    group: GroupAddress,
    keyHash: string,
    streamSeq: number,
    doneSeq: number,
  ): Promise<number[]> {
    const flow = this.flowOf(group);
    const from = Math.max(doneSeq + 1, streamSeq - ORDER_LOOKBACK, 1);
    if (flow === null || from >= streamSeq) return [];
    const now = this.#d.now();
    const read = await this.#d.broker.readTopic(group, from, streamSeq - from);
    const mine = read.filter(
      (m) =>
        m.streamSeq < streamSeq &&
        m.message.expiresAtMs > now &&
        flowKeyHash(m.message, flow) === keyHash,
    );
    if (mine.length === 0) return [];
    const floor = (await this.#d.broker.progress(group))?.ackFloorSeq ?? 0;
    return mine.map((m) => m.streamSeq).filter((s) => s > floor);
  }

  /**
   * An ordered key's head that holds no slot may be gone without having been settled here (the
   * gateway that acknowledged it died first, it expired unseen, it was removed): it is, when the
   * group's acknowledged floor passed it or the log no longer has it live. Checked at most every
   * HEAD_CHECK_MS per head on this gateway. True when it was settled now.
   */
  async #settleGoneHead(
    group: GroupAddress,
    keyHash: string,
    state: KeyState,
    rules: KeyRules,
  ): Promise<boolean> {
    const head = state.order[0];
    const now = this.#d.now();
    if (head === undefined || state.holders.some((h) => h.streamSeq === head && h.untilMs > now)) {
      return false;
    }
    const checkKey = `${seqKey(group, head)}#${keyHash}`;
    if ((this.#headChecks.get(checkKey) ?? -Infinity) > now - HEAD_CHECK_MS) return false;
    if (this.#headChecks.size >= MAX_REMEMBERED_KEYS) this.#headChecks.clear();
    this.#headChecks.set(checkKey, now);
    const [m] = await this.#d.broker.readTopic(group, head, 1);
    const live = m !== undefined && m.streamSeq === head && m.message.expiresAtMs > now;
    const floor = live ? ((await this.#d.broker.progress(group))?.ackFloorSeq ?? 0) : 0;
    if (live && floor < head) return false;
    await this.#slots.settle(group, keyHash, head, rules);
    this.#headChecks.delete(checkKey);
    return true;
  }

  /** While anything is held, what is held too long is given back within a second. */
  #sweepSoon(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => {
      if (this.#groups.size === 0) {
        if (this.#sweeper) clearInterval(this.#sweeper);
        this.#sweeper = null;
        return;
      }
      void this.sweep();
    }, 1000);
    this.#sweeper.unref();
  }

  #unhold(g: GroupHeld, h: Held): void {
    if (remove(g.held, h)) this.#heldBytes -= h.d.message.payload.length;
  }

  #forgetIfEmpty(group: GroupAddress): void {
    const k = groupKey(group);
    if (this.#groups.get(k)?.held.length === 0) this.#groups.delete(k);
  }

  /**
   * The push path's slot (GroupPushes, src/queue/push-delivery/): takes one of the key's slots
   * for a pushed delivery until `deadlineMs`, as a receive's delivery takes one (the same rules:
   * concurrency, rate, ordered); not taken when the key has no room. Nothing is held here: the
   * push scheduler keeps the delivery leased and tries again when room may have come;
   * `roomAtMs` says when the key's rate has room again (null: not waiting for its rate). Taken
   * when the group has no limit (any more).
   */
  async takePushSlot(
    group: GroupAddress,
    keyHash: string,
    d: Delivery,
    deadlineMs: number,
  ): Promise<{ readonly taken: boolean; readonly roomAtMs: number | null }> {
    const rules = keyRulesOf(this.flowOf(group));
    if (rules === null) return { taken: true, roomAtMs: null };
    const v = await this.#admitOne(group, keyHash, d, deadlineMs, rules, []);
    if (v.take) return { taken: true, roomAtMs: null };
    if (v.reason !== "rate" || rules.rate === null) return { taken: false, roomAtMs: null };
    const r = gcraTake(v.read.tatMs, this.#d.now(), rules.rate);
    return { taken: false, roomAtMs: r.ok ? this.#d.now() : r.atMs };
  }
}

function groupKey(group: GroupAddress): string {
  return JSON.stringify([group.namespace.key, group.topic, group.group]);
}

function seqKey(group: GroupAddress, streamSeq: number): string {
  return `${groupKey(group)}#${streamSeq}`;
}

function remove<T>(list: T[], item: T): boolean {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
  return i >= 0;
}

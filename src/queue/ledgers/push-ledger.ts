// What push delivery keeps beside the group's cursor, on the records port: the deliveries of a
// message held back and never pushed (for `retry.initialDelaySeconds`, or given back from a push
// cap: the store counted each as a delivery, the consumer must not), and which delivery's lease
// its handler set through the API during the push (so the pusher does not override it).
import type { GroupAddress } from "../namespace.js";
import type { RecordStore } from "../records/record-store.js";
import { COUNT, Records } from "../records/typed-records.js";

export class PushLedger {
  readonly #holdbacks: Records<number>;
  readonly #handlerLeases: Records<number>;

  constructor(records: RecordStore) {
    this.#holdbacks = new Records(records, {
      name: "b",
      codec: COUNT,
      ops: { get: "push_holdback_get", put: "push_holdback_put" },
    });
    this.#handlerLeases = new Records(records, {
      name: "h",
      codec: COUNT,
      ops: { get: "handler_lease_get", put: "handler_lease_put" },
    });
  }

  /** How many deliveries of the message were held back, unpushed (0: none). */
  async holdbacks(group: GroupAddress, streamSeq: number): Promise<number> {
    return (await this.#holdbacks.value(group, streamSeq)) ?? 0;
  }

  /** One more delivery of the message held back. `counted`: `holdbacks` as just read, if so. */
  async holdBack(group: GroupAddress, streamSeq: number, counted?: number): Promise<void> {
    const held = counted ?? (await this.holdbacks(group, streamSeq));
    await this.#holdbacks.put(group, streamSeq, held + 1);
  }

  /** The handler set the lease of delivery `deliveryCount` through the API. */
  async noteHandlerLease(
    group: GroupAddress,
    streamSeq: number,
    deliveryCount: number,
  ): Promise<void> {
    await this.#handlerLeases.put(group, streamSeq, deliveryCount);
  }

  /** The latest delivery whose lease a handler set, else null. */
  handlerLease(group: GroupAddress, streamSeq: number): Promise<number | null> {
    return this.#handlerLeases.value(group, streamSeq);
  }
}

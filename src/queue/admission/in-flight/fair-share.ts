// Fair share of the store among tenants on one gateway. Every operation a tenant's request sends
// toward the store (a publish or batch part, a receive's pull, a receive by ID, a management
// read or change) takes a slot for its duration: at most PER_TENANT slots per tenant and TOTAL
// for the gateway. An operation without a slot waits (nothing is refused here: the requests in
// flight per namespace and tenant, namespace-caps.ts, already bound how many can wait), in its
// tenant's FIFO queue, and a freed slot goes to the tenants with waiting work in turn (round
// robin). So a tenant's flood holds PER_TENANT operations in the gateway's event loop and on its
// NATS connection, not thousands, and another tenant's publish waits behind at most those. A
// tenant alone (no other began an operation within SHARED_MS) may have ALONE: its batches keep
// their throughput where the store's round trip is long, and once another tenant comes it is cut
// back to PER_TENANT as its operations end. Past PER_TENANT a tenant may have one more than the
// busiest other tenant (up to ALONE): when answers are slow (a starved gateway) a quiet tenant
// needs more than PER_TENANT in flight for its own rate, and then it gets them, rather than
// queueing behind itself while the flood holds as many. Due timers (`raises` false) never raise
// another's bound: a namespace's timers and its own requests would raise each other's.
//
// Acknowledging and extending never wait here: they settle what was already handed out (a
// delay would only cause redeliveries), each follows a delivery that took a slot, and none is
// refused anywhere else either.

/** Operations in flight toward the store per tenant on this gateway. */
export const PER_TENANT = 8;
/** Operations in flight toward the store per tenant while no other tenant has any. */
export const ALONE = 64;
/** Operations in flight toward the store on this gateway, all tenants together. */
export const TOTAL = 256;
/** How long a tenant's operation makes the others share (ms). */
export const SHARED_MS = 1000;

export interface FairShareBounds {
  readonly total: number;
  readonly perTenant: number;
  readonly alone: number;
}

interface Line {
  inFlight: number;
  /** Whether its operations in flight let other tenants have as many (see above). */
  raises: boolean;
  /** Grants of waiting operations, oldest first (from `head` on). */
  readonly waiting: (() => void)[];
  head: number;
  /** Whether the tenant is in the turn order (it has waiting work). */
  queued: boolean;
}

export interface FairShareFigures {
  readonly inFlight: number;
  readonly waiting: number;
  readonly tenants: number;
}

export class FairShare {
  readonly #total: number;
  readonly #perTenant: number;
  readonly #alone: number;
  readonly #now: () => number;
  /** The tenant that began an operation last, and when; the last other one before it, and when. */
  #last = { tenant: "", at: -Infinity };
  #other = { tenant: "", at: -Infinity };
  readonly #lines = new Map<string, Line>();
  /** Tenants with waiting work, in turn order (from `#turnHead` on). */
  #turns: string[] = [];
  #turnHead = 0;
  #inFlight = 0;
  #waiting = 0;

  constructor(
    now: () => number,
    { total, perTenant, alone }: FairShareBounds = {
      total: TOTAL,
      perTenant: PER_TENANT,
      alone: ALONE,
    },
  ) {
    if (!(total >= 1 && perTenant >= 1 && alone >= perTenant)) {
      throw new RangeError("fair share bounds must be >= 1, and alone >= perTenant");
    }
    this.#now = now;
    this.#total = total;
    this.#perTenant = perTenant;
    this.#alone = alone;
  }

  /** Runs `op` holding one of `tenant`'s slots; waits for the slot first when none is free. */
  async run<T>(tenant: string, op: () => Promise<T>, raises = true): Promise<T> {
    this.#began(tenant);
    const line = this.#line(tenant, raises);
    if (!this.#mayGo(tenant, line)) await this.#wait(tenant, line);
    else this.#take(line);
    try {
      return await op();
    } finally {
      this.#release(tenant, line);
    }
  }

  get figures(): FairShareFigures {
    return { inFlight: this.#inFlight, waiting: this.#waiting, tenants: this.#lines.size };
  }

  #began(tenant: string): void {
    const at = this.#now();
    if (this.#last.tenant === tenant) this.#last.at = at;
    else {
      this.#other = this.#last;
      this.#last = { tenant, at };
    }
  }

  /** A tenant's bound now: PER_TENANT if another tenant began an operation lately, else ALONE. */
  #bound(tenant: string): number {
    const other = this.#last.tenant === tenant ? this.#other : this.#last;
    if (other.at < this.#now() - SHARED_MS) return this.#alone;
    let busiest = 0;
    for (const [t, line] of this.#lines) {
      if (line.raises && t !== tenant && line.inFlight > busiest) busiest = line.inFlight;
    }
    return Math.min(this.#alone, Math.max(this.#perTenant, busiest + 1));
  }

  #line(tenant: string, raises: boolean): Line {
    let line = this.#lines.get(tenant);
    if (!line) {
      line = { inFlight: 0, raises, waiting: [], head: 0, queued: false };
      this.#lines.set(tenant, line);
    }
    return line;
  }

  /** A slot now: the tenant has room, the gateway has room, and none of its own waits before it. */
  #mayGo(tenant: string, line: Line): boolean {
    return (
      line.inFlight < this.#bound(tenant) &&
      this.#inFlight < this.#total &&
      line.head === line.waiting.length
    );
  }

  #take(line: Line): void {
    line.inFlight++;
    this.#inFlight++;
  }

  #wait(tenant: string, line: Line): Promise<void> {
    this.#waiting++;
    const granted = new Promise<void>((resolve) => line.waiting.push(resolve));
    if (!line.queued) this.#enqueue(tenant, line);
    // A tenant below its bound waits only for the gateway's: it may already be its turn.
    this.#dispatch();
    return granted;
  }

  #enqueue(tenant: string, line: Line): void {
    line.queued = true;
    this.#turns.push(tenant);
  }

  #release(tenant: string, line: Line): void {
    line.inFlight--;
    this.#inFlight--;
    // A tenant that was at its bound left the turn order: its freed slot brings it back, last.
    if (!line.queued && line.head < line.waiting.length) this.#enqueue(tenant, line);
    this.#dispatch();
    if (line.inFlight === 0 && !line.queued && line.head === line.waiting.length) {
      this.#lines.delete(tenant);
    }
  }

  /** Gives free slots to waiting work, one tenant's oldest operation at a time, in turn. */
  #dispatch(): void {
    while (this.#inFlight < this.#total && this.#turnHead < this.#turns.length) {
      const tenant = this.#turns[this.#turnHead++]!;
      const line = this.#lines.get(tenant)!;
      if (line.inFlight >= this.#bound(tenant)) {
        line.queued = false; // back in turn when one of its slots frees (#release)
        continue;
      }
      const grant = line.waiting[line.head]!;
      line.waiting[line.head++] = noop;
      this.#waiting--;
      this.#take(line);
      if (line.head < line.waiting.length) {
        this.#turns.push(tenant);
        if (line.head > COMPACT_PAST && line.head * 2 > line.waiting.length) {
          line.waiting.splice(0, line.head);
          line.head = 0;
        }
      } else {
        line.queued = false;
        line.waiting.length = 0;
        line.head = 0;
      }
      grant();
    }
    // The turn order's consumed head is dropped once it is most of the array.
    if (this.#turnHead === this.#turns.length) {
      this.#turns = [];
      this.#turnHead = 0;
    } else if (this.#turnHead > COMPACT_PAST && this.#turnHead * 2 > this.#turns.length) {
      this.#turns = this.#turns.slice(this.#turnHead);
      this.#turnHead = 0;
    }
  }
}

/** Consumed queue heads longer than this are cut off. */
const COMPACT_PAST = 1024;

function noop(): void {}

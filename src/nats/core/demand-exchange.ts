// Regional rate budgets without a write per request: every gateway counts each tenant's demand
// (requests and bytes it was asked for, taken or refused) per second and tells the region's other
// gateways over core NATS once a second (one small message per gateway, no JetStream). Each
// gateway then allows a tenant the part of the regional budget that matches its part of the
// tenant's demand in the last second: gateways that see a tenant's traffic share its budget in
// proportion, one that sees all of it gets all of it. See docs/architecture.md, "Regional budgets".
import { randomBytes } from "node:crypto";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";

export type DemandKind = "requests" | "bytes" | "delayed";

/** Where each kind is in a report's per-tenant array (older gateways send only the first two). */
const INDEX: Record<DemandKind, 0 | 1 | 2> = { requests: 0, bytes: 1, delayed: 2 };

interface Report {
  readonly g: string;
  /** Per tenant (per namespace for delayed): [requests, bytes, delayed] asked for last second. */
  readonly d: Record<string, number[]>;
}

/** A report older than this is ignored (its gateway stopped, or lost its connection). */
const STALE_MS = 3000;
/** Tenants one report carries at most (the busiest); the rest are not shared. */
const MAX_TENANTS_PER_REPORT = 2000;

export class DemandExchange {
  readonly #nc: NatsConnection;
  readonly #subject: string;
  readonly #id = randomBytes(8).toString("hex");
  readonly #log: Logger;
  /** This second's demand, and the last whole second's (what is reported and compared). */
  #current = new Map<string, number[]>();
  #last = new Map<string, number[]>();
  /** Other gateways' last reports. */
  readonly #others = new Map<string, { at: number; d: Record<string, number[]> }>();
  #timer: NodeJS.Timeout | null = null;
  #sub: Subscription | null = null;

  constructor(nc: NatsConnection, region: string, log: Logger) {
    this.#nc = nc;
    this.#subject = `vqs._demand.${region}`;
    this.#log = log;
  }

  start(): void {
    this.#sub = this.#nc.subscribe(this.#subject, {
      callback: (_err, msg) => {
        try {
          const r = msg.json<Report>();
          if (r.g !== this.#id && typeof r.d === "object") {
            this.#others.set(r.g, { at: Date.now(), d: r.d });
          }
        } catch {
          // not a report of ours
        }
      },
    });
    this.#timer = setInterval(() => this.#tick(), 1000);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#sub?.unsubscribe();
  }

  /** Counts demand of a tenant on this gateway (taken or refused). */
  note(tenant: string, kind: DemandKind, amount: number): void {
    let d = this.#current.get(tenant);
    if (!d) this.#current.set(tenant, (d = [0, 0, 0]));
    d[INDEX[kind]]! += amount;
  }

  /**
   * This gateway's part of a regional budget of `limit` per second for the tenant: the limit in
   * proportion to this gateway's part of the tenant's demand in the last second (+1 each, so a
   * gateway that just began to see the tenant gets a little, and one alone gets all).
   */
  share(tenant: string, kind: DemandKind, limit: number): number {
    const i = INDEX[kind];
    const mine = Math.max(this.#last.get(tenant)?.[i] ?? 0, this.#current.get(tenant)?.[i] ?? 0);
    let others = 0;
    const now = Date.now();
    for (const o of this.#others.values()) {
      if (now - o.at <= STALE_MS) others += o.d[tenant]?.[i] ?? 0;
    }
    if (others === 0) return limit;
    return Math.max(1, Math.floor((limit * (mine + 1)) / (mine + others + 1)));
  }

  #tick(): void {
    this.#last = this.#current;
    this.#current = new Map();
    const now = Date.now();
    for (const [g, o] of this.#others) if (now - o.at > STALE_MS) this.#others.delete(g);
    if (this.#last.size === 0) return;
    const busiest = [...this.#last]
      .sort((a, b) => b[1][0]! + b[1][2]! - a[1][0]! - a[1][2]! || b[1][1]! - a[1][1]!)
      .slice(0, MAX_TENANTS_PER_REPORT);
    const report: Report = { g: this.#id, d: Object.fromEntries(busiest) };
    try {
      this.#nc.publish(this.#subject, JSON.stringify(report));
    } catch (err) {
      this.#log.debug({ err }, "demand report not sent");
    }
  }
}

// Push health per group (when a push last succeeded, when one last failed and how), for the
// management API: each gateway keeps its own view in memory and merges it into the group's
// record in VQS_LEASES at most every few seconds, so recording costs no round trip per push.
import type { Logger } from "../../logger.js";
import type { PushOutcomes } from "../../queue/broker.js";
import type { PushHealth } from "../../queue/management/queue-admin.js";
import type { GroupAddress } from "../../queue/namespace.js";
import { groupNames, type GroupNames } from "../core/naming.js";
import type { LeaseRecords } from "../queue-state/records/lease-records.js";

const FLUSH_MS = 5000;
/** Groups whose health waits to be written, at most (the oldest is dropped). */
const MAX_PENDING = 10_000;

export class PushHealthRecorder implements PushOutcomes {
  readonly #records: LeaseRecords;
  readonly #region: string;
  readonly #log: Logger;
  readonly #pending = new Map<string, { g: GroupNames; health: PushHealth }>();
  readonly #timer: NodeJS.Timeout;

  constructor(records: LeaseRecords, region: string, log: Logger) {
    this.#records = records;
    this.#region = region;
    this.#log = log;
    this.#timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.#timer.unref();
  }

  /** A push of the group ended with `outcome`: kept here, merged into the record at the flush. */
  notePushOutcome(group: GroupAddress, outcome: string, atMs: number): void {
    const g = groupNames(this.#region, group);
    const k = `${g.stream}.${g.consumer}`;
    const was = this.#pending.get(k)?.health;
    const ok = outcome === "success";
    if (!was && this.#pending.size >= MAX_PENDING) {
      this.#pending.delete(this.#pending.keys().next().value!);
    }
    this.#pending.set(k, {
      g,
      health: {
        lastSuccessAtMs: ok ? atMs : (was?.lastSuccessAtMs ?? null),
        lastFailureAtMs: ok ? (was?.lastFailureAtMs ?? null) : atMs,
        lastFailure: ok ? (was?.lastFailure ?? null) : outcome,
      },
    });
  }

  async flush(): Promise<void> {
    const batch = [...this.#pending.values()];
    this.#pending.clear();
    for (const { g, health } of batch) {
      await this.#records.mergePushHealth(g, health).catch((err: unknown) => {
        this.#log.debug({ err }, "push health not recorded this time");
      });
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}

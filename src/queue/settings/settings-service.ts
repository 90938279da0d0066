// The settings resource in domain terms: store, read, remove and list a namespace's consumer
// settings documents. Routes parse the path and body and call these; the SettingsStore port
// keeps the documents.
import { AppError } from "../../errors.js";
import type { StoreAdmission } from "../admission/stored/store-admission.js";
import type { Namespace } from "../namespace.js";
import type { SettingsEntry } from "./consumer-settings.js";
import type { PushDestinations } from "./push-destinations.js";
import type { SettingsStore } from "./settings-store.js";
import type { TopicTarget } from "./topic-pattern.js";
import { parseSettings } from "./validate.js";

/** One settings document's place: a namespace, a topic or pattern, a group. */
export interface SettingsAddress {
  readonly namespace: Namespace;
  readonly target: TopicTarget;
  readonly group: string;
}

export interface SettingsServiceDeps {
  readonly store: SettingsStore;
  /** Where each namespace's pushes may go. */
  readonly pushDestinations: PushDestinations;
  /** The caps on documents per namespace and per tenant (and the tenant's deployments). */
  readonly admission?: Pick<StoreAdmission, "admitSettings">;
}

export function targetText(target: TopicTarget): string {
  return target.kind === "topic" ? target.topic : target.pattern;
}

export class SettingsService {
  readonly #d: SettingsServiceDeps;

  constructor(deps: SettingsServiceDeps) {
    this.#d = deps;
  }

  get store(): SettingsStore {
    return this.#d.store;
  }

  /** Checks `body` (400, then 403 for the push URL) and replaces the document with it. */
  async put(at: SettingsAddress, body: unknown): Promise<SettingsEntry> {
    const prefixes = this.#d.pushDestinations.prefixesFor(at.namespace);
    const settings = parseSettings(body, at.target, prefixes);
    const topic = targetText(at.target);
    // The count is this gateway's copy; at a cap, only a replacement may be stored, which
    // takes a current read to tell.
    await this.#d.admission?.admitSettings(
      at.namespace.key,
      this.#d.store.count(at.namespace),
      async () => Boolean(await this.#d.store.get(at.namespace, topic, at.group)),
    );
    return this.#d.store.put(at.namespace, topic, at.group, settings);
  }

  async get(at: SettingsAddress): Promise<SettingsEntry> {
    const entry = await this.#d.store.get(at.namespace, targetText(at.target), at.group);
    if (!entry) throw new AppError("settings_not_found");
    return entry;
  }

  /** 404 settings_not_found when there was none (see docs/architecture.md). */
  async delete(at: SettingsAddress): Promise<void> {
    if (!(await this.#d.store.delete(at.namespace, targetText(at.target), at.group))) {
      throw new AppError("settings_not_found");
    }
  }

  list(namespace: Namespace): SettingsEntry[] {
    return this.#d.store.list(namespace);
  }
}

// The gateway's v3 HTTP API as the tool uses it: fetch, the token and deployment headers, and
// errors turned into ApiError (the API's `{"error":{"code","message"}}`) or UnreachableError.
// The tool talks to the service only through this (it never imports NATS code), so it works
// against any gateway, local or remote.
import type {
  DeadLetterOrigin,
  DeliveredMessage as ReceivedMessage,
  PublishAnswer as PublishResult,
} from "../api/messages.js";
import type {
  BusiestKeys,
  BusyKey,
  ConsumerGroup as GroupInfo,
  ConsumerGroups,
  Namespace as NamespaceInfo,
  Namespaces,
  NamespaceStorage,
  PeekedMessage,
  PeekPage,
  Purged,
  Sought,
  Topic as TopicInfo,
  TopicPage,
} from "../api/management.js";
import type {
  ConsumerSettingsDocument as SettingsDocument,
  ConsumerSettingsInput as SettingsBody,
  DeadLetterSettings,
  FlowControlSettings,
  PushSettings,
  RedriveResult,
  RetrySettings,
  SettingsList,
} from "../api/settings.js";
import { ApiError, UnreachableError } from "./errors.js";
import { multipartParts, type StreamedPart } from "./transfer/multipart-reader.js";
import { StallTimeout } from "./transfer/stall-timeout.js";

// The API's shapes are its definitions' types (src/api; imported as types only: nothing of the
// server is loaded by the tool).
export type {
  BusiestKeys,
  BusyKey,
  DeadLetterOrigin,
  DeadLetterSettings,
  FlowControlSettings,
  GroupInfo,
  NamespaceInfo,
  NamespaceStorage,
  PeekedMessage,
  PublishResult,
  PushSettings,
  ReceivedMessage,
  RedriveResult,
  RetrySettings,
  SettingsBody,
  SettingsDocument,
  StreamedPart,
  TopicInfo,
};

export interface Connection {
  /** The gateway's base URL (VQS_URL). */
  readonly url: URL;
  readonly token: string;
  /** Sent as Vqs-Deployment-Id: the deployment's namespace. null: the deploymentless one. */
  readonly deploymentId: string | null;
  /** Sent as Vqs-Namespace (operators only): act in that namespace. null: the token's own. */
  readonly namespace?: string | null;
}

export interface ReceiveOptions {
  readonly maxMessages: number;
  readonly visibilityTimeoutSeconds: number;
  readonly waitSeconds: number;
  /** Aborts the request (a long poll, say); the gateway leaves nothing leased then. */
  readonly signal?: AbortSignal;
}

export interface PublishOptions {
  readonly contentType?: string;
  readonly delaySeconds?: number;
  readonly retentionSeconds?: number;
  readonly idempotencyKey?: string;
}

export interface RequestOptions {
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  /** A streamed transfer: ends when nothing moved for its time, not at a fixed deadline. */
  readonly stall?: StallTimeout;
}

export interface ApiClientOptions {
  readonly fetch?: typeof fetch;
  /** Per request, connection included. */
  readonly timeoutMs?: number;
  readonly userAgent?: string;
}

export class ApiClient {
  readonly #conn: Connection;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #userAgent: string;

  constructor(conn: Connection, o: ApiClientOptions = {}) {
    this.#conn = conn;
    this.#fetch = o.fetch ?? fetch;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    this.#userAgent = o.userAgent ?? "vqs-cli";
  }

  get baseUrl(): string {
    return this.#conn.url.href;
  }

  /**
   * One request to `/api/v3/<path>` (path segments already encoded). Answers the parsed JSON
   * body (null for an empty one); throws ApiError for a non-2xx answer, UnreachableError when
   * no answer came.
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    o: RequestOptions = {},
  ): Promise<unknown> {
    const { res, text } = await this.#exchange(method, path, body, o);
    if (text === "") return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ApiError(
        res.status,
        "invalid_response",
        `the server answered non-JSON: ${cut(text)}`,
      );
    }
  }

  /**
   * The request and its whole answer; non-2xx is ApiError. When `o.signal` aborts, its reason
   * (an AbortError) is thrown as it is: the caller asked for it, so it is no UnreachableError.
   */
  async #exchange(
    method: string,
    path: string,
    body: unknown,
    o: RequestOptions,
  ): Promise<{ res: Response; text: string }> {
    const { res, timeoutMs, stalled } = await this.#send(method, path, body, o);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw this.#failure(err, o, timeoutMs, stalled);
    }
    if (!res.ok) throw apiError(res, text);
    return { res, text };
  }

  /**
   * The request, its answer's body not read yet (a 2xx answer; anything else is ApiError). With
   * `o.stall`, no fixed deadline applies: the request ends when nothing moved for the stall's
   * time (the caller touches it as bytes go out or come in).
   */
  async #send(
    method: string,
    path: string,
    body: unknown,
    o: RequestOptions,
  ): Promise<{ res: Response; timeoutMs: number; stalled: boolean }> {
    const url = new URL(`api/v3/${path}`, withSlash(this.#conn.url));
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#conn.token}`,
      "user-agent": this.#userAgent,
      ...o.headers,
    };
    if (this.#conn.deploymentId !== null) headers["vqs-deployment-id"] = this.#conn.deploymentId;
    if (this.#conn.namespace) headers["vqs-namespace"] = this.#conn.namespace;
    const raw = body instanceof RawBody;
    if (body !== undefined && !raw) headers["content-type"] = "application/json";
    const timeoutMs = o.stall?.ms ?? o.timeoutMs ?? this.#timeoutMs;
    const timeout = o.stall?.signal ?? AbortSignal.timeout(timeoutMs);
    const signal = o.signal ? AbortSignal.any([timeout, o.signal]) : timeout;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method,
        headers,
        ...(raw
          ? { body: body.data, duplex: "half" }
          : body !== undefined
            ? { body: JSON.stringify(body) }
            : {}),
        signal,
      });
    } catch (err) {
      throw this.#failure(err, o, timeoutMs, o.stall !== undefined);
    }
    if (!res.ok) {
      let text = "";
      try {
        text = await res.text();
      } catch (err) {
        throw this.#failure(err, o, timeoutMs, o.stall !== undefined);
      }
      throw apiError(res, text);
    }
    return { res, timeoutMs, stalled: o.stall !== undefined };
  }

  /** What a failed request throws: the caller's own abort as it is, else UnreachableError. */
  #failure(err: unknown, o: RequestOptions, timeoutMs: number, stalled: boolean): unknown {
    if (o.signal?.aborted) return o.signal.reason;
    return new UnreachableError(
      `cannot reach ${this.#conn.url.origin}: ${reason(err, timeoutMs, stalled)}`,
      "unreachable",
      { cause: err },
    );
  }

  // Messages (docs/api.md, "Operations"): receive, acknowledge, release; redrive of a dead-letter topic.

  /**
   * Receives up to `maxMessages` messages of a group (NDJSON), waiting up to `waitSeconds` for
   * one when there are none. `date` is the gateway's clock at its answer (the Date header).
   */
  async receive(
    topic: string,
    group: string,
    o: ReceiveOptions,
  ): Promise<{ messages: ReceivedMessage[]; date: Date | null }> {
    const headers: Record<string, string> = {
      accept: "application/x-ndjson",
      "vqs-max-messages": String(o.maxMessages),
      "vqs-visibility-timeout-seconds": String(o.visibilityTimeoutSeconds),
      "vqs-wait-seconds": String(o.waitSeconds),
    };
    const { res, text } = await this.#exchange("POST", groupPath(topic, group), undefined, {
      headers,
      // The wait is the server's; the usual timeout applies after it.
      timeoutMs: this.#timeoutMs + o.waitSeconds * 1000,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const dateHeader = res.headers.get("date");
    const date = dateHeader ? new Date(dateHeader) : null;
    const messages: ReceivedMessage[] = [];
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      try {
        messages.push(JSON.parse(line) as ReceivedMessage);
      } catch {
        throw new ApiError(res.status, "invalid_response", `not NDJSON: ${cut(line)}`);
      }
    }
    return { messages, date: date && !Number.isNaN(date.getTime()) ? date : null };
  }

  /** Acknowledges a delivery (DELETE of its lease); idempotent. */
  async acknowledge(topic: string, group: string, receiptHandle: string): Promise<void> {
    await this.request("DELETE", leasePath(topic, group, receiptHandle));
  }

  /** Sets a lease to end `seconds` from now; 0 releases the message at once. */
  async setVisibility(
    topic: string,
    group: string,
    receiptHandle: string,
    seconds: number,
  ): Promise<void> {
    await this.request("PATCH", leasePath(topic, group, receiptHandle), {
      visibilityTimeoutSeconds: seconds,
    });
  }

  /**
   * Moves up to `limit` messages of a dead-letter topic back (to `topic`, or each to the topic
   * it came from): one round of the server's redrive, which it finishes once it started.
   */
  async redrive(
    deadLetterTopic: string,
    o: { topic?: string; limit: number },
  ): Promise<RedriveResult> {
    const body = { ...(o.topic !== undefined ? { topic: o.topic } : {}), limit: o.limit };
    // A round of 10,000 takes a while; give it 10 ms a message beyond the usual timeout.
    const timeoutMs = this.#timeoutMs + o.limit * 10;
    return (await this.request(
      "POST",
      `topic/${encodeURIComponent(deadLetterTopic)}/redrive`,
      body,
      { timeoutMs },
    )) as RedriveResult;
  }

  /**
   * Publishes one message; `data` may be a stream (a file, stdin), sent as it is read. The
   * headers are the API's (docs/api.md, "Operations"): Content-Type, Vqs-Delay-Seconds,
   * Vqs-Retention-Seconds, Vqs-Idempotency-Key. A stream is bounded by `o.stall` (nothing moved
   * for its time) rather than by a deadline; `o.size`, when known, is sent as Content-Length, so
   * a body over the gateway's limit is refused before it is sent.
   */
  async publish(
    topic: string,
    data: Uint8Array | ReadableStream<Uint8Array>,
    o: PublishOptions & { readonly size?: number; readonly stall?: StallTimeout } = {},
  ): Promise<PublishResult> {
    const headers: Record<string, string> = {
      "content-type": o.contentType ?? "application/octet-stream",
    };
    if (o.delaySeconds !== undefined) headers["vqs-delay-seconds"] = String(o.delaySeconds);
    if (o.retentionSeconds !== undefined) {
      headers["vqs-retention-seconds"] = String(o.retentionSeconds);
    }
    if (o.idempotencyKey !== undefined) headers["vqs-idempotency-key"] = o.idempotencyKey;
    if (o.size !== undefined) headers["content-length"] = String(o.size);
    return (await this.request("POST", topicPath(topic), new RawBody(data), {
      headers,
      ...(o.stall ? { stall: o.stall } : {}),
    })) as PublishResult;
  }

  /**
   * Receives up to `maxMessages` messages as multipart/mixed, each payload streamed as it
   * arrives (never whole in memory). The request ends when nothing moved for `o.stall`'s time
   * (the long-poll wait excepted: the stall starts after it).
   */
  async receiveParts(
    topic: string,
    group: string,
    o: Omit<ReceiveOptions, "signal"> & { readonly stallMs: number },
  ): Promise<AsyncGenerator<StreamedPart>> {
    const stall = new StallTimeout(o.stallMs + o.waitSeconds * 1000);
    const { res } = await this.#send("POST", groupPath(topic, group), undefined, {
      headers: {
        accept: "multipart/mixed",
        "vqs-max-messages": String(o.maxMessages),
        "vqs-visibility-timeout-seconds": String(o.visibilityTimeoutSeconds),
        "vqs-wait-seconds": String(o.waitSeconds),
      },
      stall,
    });
    const origin = this.#conn.url.origin;
    return (async function* () {
      try {
        if (res.status === 204) return;
        for await (const part of multipartParts(res, () => stall.touch())) yield part;
      } catch (err) {
        if (stall.signal.aborted) {
          throw new UnreachableError(
            `cannot reach ${origin}: nothing moved for ${stall.ms / 1000} s`,
            "unreachable",
            { cause: err },
          );
        }
        throw err;
      } finally {
        stall.clear();
      }
    })();
  }

  // Management (docs/api.md, "Management API").

  /** Every topic of the namespace, by name (all pages). */
  async listTopics(): Promise<TopicInfo[]> {
    const topics: TopicInfo[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
      const page = (await this.request("GET", `topics?limit=1000${query}`)) as TopicPage;
      topics.push(...page.topics);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return topics;
  }

  /** The namespace's storage against its quotas (from one page of the topic list). */
  async storage(): Promise<NamespaceStorage> {
    const page = (await this.request("GET", "topics?limit=1")) as TopicPage;
    return page.storage;
  }

  async topic(topic: string): Promise<TopicInfo> {
    return (await this.request("GET", topicPath(topic))) as TopicInfo;
  }

  /** Every group of the topic, by name (all pages). */
  async groups(topic: string): Promise<GroupInfo[]> {
    const groups: GroupInfo[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
      const page = (await this.request(
        "GET",
        `${topicPath(topic)}/consumers?limit=1000${query}`,
      )) as Omit<ConsumerGroups, "nextCursor"> & { nextCursor?: string | null };
      groups.push(...page.consumerGroups);
      // A gateway from before group pages sends no cursor: its one answer is all.
      cursor = page.nextCursor ?? null;
    } while (cursor !== null);
    return groups;
  }

  /** Messages as groups see them, oldest first, leasing nothing. */
  async peek(
    topic: string,
    o: { after?: string; limit: number; full: boolean },
  ): Promise<PeekPage> {
    const q = new URLSearchParams({ limit: String(o.limit) });
    if (o.after !== undefined) q.set("after", o.after);
    if (o.full) q.set("payload", "full");
    return (await this.request("GET", `${topicPath(topic)}/messages?${q.toString()}`)) as PeekPage;
  }

  async purge(topic: string): Promise<Purged> {
    return (await this.request("POST", `${topicPath(topic)}/purge`)) as Purged;
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.request("DELETE", topicPath(topic));
  }

  async deleteGroup(topic: string, group: string): Promise<void> {
    await this.request("DELETE", groupPath(topic, group));
  }

  /** `to`: "earliest", "latest" or an ISO time. */
  async seek(topic: string, group: string, to: string): Promise<Sought> {
    return (await this.request("POST", `${groupPath(topic, group)}/seek`, { to })) as Sought;
  }

  /** A group's busiest flow-control keys, region-wide (404 group_not_found: no such group). */
  async keys(topic: string, group: string, limit: number): Promise<BusiestKeys> {
    const q = new URLSearchParams({ limit: String(limit) });
    return (await this.request(
      "GET",
      `${groupPath(topic, group)}/keys?${q.toString()}`,
    )) as BusiestKeys;
  }

  /** Operators only (403 operator_only otherwise). */
  async namespaces(): Promise<NamespaceInfo[]> {
    const body = (await this.request("GET", "namespaces")) as Namespaces;
    return body.namespaces;
  }

  // Consumer settings (docs/api.md, "Consumer settings").

  /** The stored document, or null when there is none (404 settings_not_found). */
  async getSettings(topic: string, group: string): Promise<SettingsDocument | null> {
    try {
      return (await this.request("GET", settingsPath(topic, group))) as SettingsDocument;
    } catch (err) {
      if (err instanceof ApiError && err.code === "settings_not_found") return null;
      throw err;
    }
  }

  async putSettings(topic: string, group: string, body: SettingsBody): Promise<SettingsDocument> {
    return (await this.request("PUT", settingsPath(topic, group), body)) as SettingsDocument;
  }

  async deleteSettings(topic: string, group: string): Promise<void> {
    await this.request("DELETE", settingsPath(topic, group));
  }

  async listSettings(): Promise<SettingsDocument[]> {
    const body = (await this.request("GET", "settings")) as Partial<SettingsList>;
    return body?.settings ?? [];
  }
}

/** `/api/v3/topic/{topic}/consumer/{group}/settings`; `*` of a pattern survives encoding. */
export function settingsPath(topic: string, group: string): string {
  return `topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}/settings`;
}

/** A request body sent as it is (a payload), not as JSON. */
class RawBody {
  constructor(readonly data: Uint8Array | ReadableStream<Uint8Array>) {}
}

/** `/api/v3/topic/{topic}`. */
export function topicPath(topic: string): string {
  return `topic/${encodeURIComponent(topic)}`;
}

/** `/api/v3/topic/{topic}/consumer/{group}`. */
export function groupPath(topic: string, group: string): string {
  return `topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}`;
}

function leasePath(topic: string, group: string, receiptHandle: string): string {
  return `${groupPath(topic, group)}/lease/${encodeURIComponent(receiptHandle)}`;
}

/** The base URL as a directory, so `api/v3/...` resolves under a path prefix too. */
function withSlash(url: URL): URL {
  return url.pathname.endsWith("/") ? url : new URL(`${url.href}/`);
}

function apiError(res: Response, text: string): ApiError {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === "string") {
      const message = typeof error.message === "string" ? error.message : error.code;
      return new ApiError(res.status, error.code, message);
    }
  } catch {
    // not the API's shape: a proxy's page, say
  }
  return new ApiError(res.status, `http_${res.status}`, cut(text) || res.statusText);
}

function cut(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}...` : flat;
}

/** Why fetch failed, in a few words (undici hides the system error in `cause`). */
function reason(err: unknown, timeoutMs: number, stalled: boolean): string {
  if (err instanceof DOMException && err.name === "TimeoutError") {
    return stalled
      ? `nothing moved for ${timeoutMs / 1000} s`
      : `no answer within ${timeoutMs / 1000} s`;
  }
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string }) : null;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

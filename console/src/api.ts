// The gateway's HTTP API as the console uses it: fetch with the session's headers (the token as
// `Authorization: Bearer`, never in a URL), errors turned into ApiError with the API's own code
// and message, and the form field an error is about (so a form can show it in place).
import type {
  BusiestKeys,
  Group,
  NamespaceInfo,
  PeekPage,
  PublishResult,
  RedriveResult,
  SettingsDocument,
  SettingsList,
  Topic,
  TopicPage,
} from "./types.js";

export interface Credentials {
  readonly token: string;
  /** Vqs-Deployment-Id; "" for none. */
  readonly deploymentId: string;
  /** Vqs-Namespace (operators); "" for the token's own. */
  readonly namespace: string;
}

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The form field this error is about, when it names one. */
  get field(): string | null {
    return fieldOf(this.code, this.message);
  }
}

const FIELD_OF_CODE: Readonly<Record<string, string>> = {
  invalid_topic_name: "topic",
  invalid_topic_pattern: "topic",
  invalid_consumer_group_name: "group",
  invalid_retention_seconds: "retentionSeconds",
  invalid_delay_seconds: "delaySeconds",
  invalid_idempotency_key: "idempotencyKey",
  invalid_content_type: "contentType",
  payload_too_large: "body",
  push_destination_not_allowed: "push.url",
  invalid_deployment_id: "deploymentId",
  // The console's own check, before anything is sent (a body that is not base64).
  invalid_body: "body",
};

/**
 * The field an API error names: a fixed field per code, or for invalid_settings the path its
 * message starts with or names ("deadLetter.maxDeliveries must be…", "Unknown field push.x.",
 * "flowControl.rate.limit and … are required").
 */
export function fieldOf(code: string, message: string): string | null {
  const fixed = FIELD_OF_CODE[code];
  if (fixed) return fixed;
  if (code !== "invalid_settings") return null;
  const m = /\b(push|retry|deadLetter|flowControl)(\.[A-Za-z]+)*\b/.exec(message);
  return m ? m[0] : null;
}

export interface RequestOptions {
  readonly body?: string | Uint8Array<ArrayBuffer>;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answer null instead of throwing for this error code (e.g. settings_not_found). */
  readonly nullOn?: string;
}

export type AuthFailure = (error: ApiError) => void;

export class Api {
  constructor(
    private readonly credentials: Credentials,
    private readonly onAuthFailure: AuthFailure = () => {},
  ) {}

  /** The session's headers (token, namespace or deployment) with `extra`. */
  private headers(extra: Readonly<Record<string, string>>): Record<string, string> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.credentials.token}`,
      ...extra,
    };
    if (this.credentials.namespace) headers["vqs-namespace"] = this.credentials.namespace;
    else if (this.credentials.deploymentId) {
      headers["vqs-deployment-id"] = this.credentials.deploymentId;
    }
    return headers;
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const headers = this.headers({ accept: "application/json", ...opts.headers });
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers,
        ...(opts.body !== undefined ? { body: opts.body } : {}),
        credentials: "omit",
      });
    } catch {
      throw new ApiError(0, "network_error", "The gateway cannot be reached.");
    }
    if (response.ok) {
      if (response.status === 204) return undefined as T;
      const text = await response.text();
      return (text ? JSON.parse(text) : undefined) as T;
    }
    const error = await errorOf(response);
    if (opts.nullOn === error.code) return null as T;
    if (response.status === 401) this.onAuthFailure(error);
    throw error;
  }

  /**
   * A request whose answer is read as a stream (a payload download): the Response of a 2xx, else
   * the API's error as ApiError.
   */
  async open(method: string, path: string, extra: Record<string, string>): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(path, { method, headers: this.headers(extra), credentials: "omit" });
    } catch {
      throw new ApiError(0, "network_error", "The gateway cannot be reached.");
    }
    if (response.ok) return response;
    const error = await errorOf(response);
    if (response.status === 401) this.onAuthFailure(error);
    throw error;
  }

  listTopics(cursor: string | null, limit: number): Promise<TopicPage> {
    const q = new URLSearchParams({ limit: String(limit) });
    if (cursor) q.set("cursor", cursor);
    return this.request("GET", `/api/v3/topics?${q.toString()}`);
  }

  topic(name: string): Promise<Topic> {
    return this.request("GET", `/api/v3/topic/${enc(name)}`);
  }

  /** Every group of the topic, by name (all pages). */
  async groups(topic: string): Promise<readonly Group[]> {
    const groups: Group[] = [];
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ limit: "1000" });
      if (cursor) q.set("cursor", cursor);
      const r: { consumerGroups: Group[]; nextCursor: string | null } = await this.request(
        "GET",
        `/api/v3/topic/${enc(topic)}/consumers?${q.toString()}`,
      );
      groups.push(...r.consumerGroups);
      cursor = r.nextCursor;
    } while (cursor);
    return groups;
  }

  peek(
    topic: string,
    o: { after?: string | null; limit?: number; full?: boolean } = {},
  ): Promise<PeekPage> {
    const q = new URLSearchParams({ limit: String(o.limit ?? 20) });
    if (o.after) q.set("after", o.after);
    if (o.full) q.set("payload", "full");
    return this.request("GET", `/api/v3/topic/${enc(topic)}/messages?${q.toString()}`);
  }

  publish(topic: string, message: PublishInput): Promise<PublishResult> {
    const headers: Record<string, string> = {};
    if (message.contentType) headers["content-type"] = message.contentType;
    if (message.delaySeconds) headers["vqs-delay-seconds"] = message.delaySeconds;
    if (message.retentionSeconds) headers["vqs-retention-seconds"] = message.retentionSeconds;
    if (message.idempotencyKey) headers["vqs-idempotency-key"] = message.idempotencyKey;
    return this.request("POST", `/api/v3/topic/${enc(topic)}`, { body: message.body, headers });
  }

  purge(topic: string): Promise<{ purged: number }> {
    return this.request("POST", `/api/v3/topic/${enc(topic)}/purge`);
  }

  deleteTopic(topic: string): Promise<void> {
    return this.request("DELETE", `/api/v3/topic/${enc(topic)}`);
  }

  deleteGroup(topic: string, group: string): Promise<void> {
    return this.request("DELETE", `/api/v3/topic/${enc(topic)}/consumer/${enc(group)}`);
  }

  seek(topic: string, group: string, to: string): Promise<{ to: string }> {
    return this.request(
      "POST",
      `/api/v3/topic/${enc(topic)}/consumer/${enc(group)}/seek`,
      json({ to }),
    );
  }

  redrive(
    deadLetterTopic: string,
    body: { topic?: string; limit?: number },
  ): Promise<RedriveResult> {
    return this.request("POST", `/api/v3/topic/${enc(deadLetterTopic)}/redrive`, json(body));
  }

  /** The group's busiest flow-control keys (in flight and waiting), region-wide. */
  keys(topic: string, group: string, limit: number): Promise<BusiestKeys> {
    return this.request(
      "GET",
      `/api/v3/topic/${enc(topic)}/consumer/${enc(group)}/keys?limit=${limit}`,
    );
  }

  settings(topicOrPattern: string, group: string): Promise<SettingsDocument | null> {
    return this.request("GET", settingsPath(topicOrPattern, group), {
      nullOn: "settings_not_found",
    });
  }

  putSettings(topicOrPattern: string, group: string, body: unknown): Promise<SettingsDocument> {
    return this.request("PUT", settingsPath(topicOrPattern, group), json(body));
  }

  deleteSettings(topicOrPattern: string, group: string): Promise<void> {
    return this.request("DELETE", settingsPath(topicOrPattern, group));
  }

  async allSettings(): Promise<readonly SettingsDocument[]> {
    return (await this.request<SettingsList>("GET", "/api/v3/settings")).settings;
  }

  async namespaces(): Promise<readonly NamespaceInfo[]> {
    return (await this.request<{ namespaces: NamespaceInfo[] }>("GET", "/api/v3/namespaces"))
      .namespaces;
  }
}

/** What the publish form sends; numbers as typed, so the API's validation has the last word. */
export interface PublishInput {
  readonly body: string | Uint8Array<ArrayBuffer>;
  readonly contentType: string;
  readonly delaySeconds: string;
  readonly retentionSeconds: string;
  readonly idempotencyKey: string;
}

const enc = encodeURIComponent;

function settingsPath(topicOrPattern: string, group: string): string {
  // `*` stays as it is: encodeURIComponent leaves it alone, and the API reads it as a pattern.
  return `/api/v3/topic/${enc(topicOrPattern)}/consumer/${enc(group)}/settings`;
}

function json(body: unknown): RequestOptions {
  return { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
}

async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.code) {
      return new ApiError(response.status, body.error.code, body.error.message ?? body.error.code);
    }
  } catch {
    // not the API's JSON: a proxy's page, say
  }
  return new ApiError(
    response.status,
    `http_${response.status}`,
    `The gateway answered ${response.status} ${response.statusText}.`.replace(/ \.$/, "."),
  );
}

/** GET /console/dev-token: a development token, or null where the gateway offers none. */
export async function fetchDevToken(): Promise<string | null> {
  try {
    const r = await fetch("/console/dev-token", { credentials: "omit" });
    if (!r.ok) return null;
    return ((await r.json()) as { token?: string }).token ?? null;
  } catch {
    return null;
  }
}

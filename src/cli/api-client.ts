// The gateway's v3 HTTP API as the tool uses it: fetch, the token and deployment headers, and
// errors turned into ApiError (the API's `{"error":{"code","message"}}`) or UnreachableError.
// The tool talks to the service only through this (it never imports NATS code), so it works
// against any gateway, local or remote.
import { ApiError, UnreachableError } from "./errors.js";

export interface Connection {
  /** The gateway's base URL (VQS_URL). */
  readonly url: URL;
  readonly token: string;
  /** Sent as Vqs-Deployment-Id: the deployment's namespace. null: the deploymentless one. */
  readonly deploymentId: string | null;
}

/** A consumer settings document as the API answers it (README, "Consumer settings"). */
export interface SettingsDocument {
  readonly topic: string;
  readonly consumerGroup: string;
  readonly push: PushSettings | null;
  readonly retry: RetrySettings;
  readonly deadLetter: DeadLetterSettings | null;
  readonly updatedAt?: string;
}

export interface PushSettings {
  readonly url: string;
  readonly maxConcurrency: number;
  readonly timeoutSeconds: number;
  readonly autoAck: boolean;
}

export interface RetrySettings {
  readonly afterSeconds: number;
  readonly initialDelaySeconds: number;
  readonly maxBackoffSeconds: number;
}

export interface DeadLetterSettings {
  readonly topic: string;
  readonly maxDeliveries: number;
}

/** The body of a PUT: every field optional (the gateway fills in defaults). */
export interface SettingsBody {
  push?: Partial<PushSettings> & { url: string };
  retry?: Partial<RetrySettings>;
  deadLetter?: DeadLetterSettings;
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
  async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const url = new URL(`api/v3/${path}`, withSlash(this.#conn.url));
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#conn.token}`,
      "user-agent": this.#userAgent,
    };
    if (this.#conn.deploymentId !== null) headers["vqs-deployment-id"] = this.#conn.deploymentId;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    let text: string;
    try {
      res = await this.#fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw new UnreachableError(
        `cannot reach ${this.#conn.url.origin}: ${reason(err, this.#timeoutMs)}`,
        "unreachable",
        { cause: err },
      );
    }
    if (!res.ok) throw apiError(res, text);
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

  // Consumer settings (README, "Consumer settings").

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
    const body = (await this.request("GET", "settings")) as { settings?: SettingsDocument[] };
    return body?.settings ?? [];
  }
}

/** `/api/v3/topic/{topic}/consumer/{group}/settings`; `*` of a pattern survives encoding. */
export function settingsPath(topic: string, group: string): string {
  return `topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}/settings`;
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
function reason(err: unknown, timeoutMs: number): string {
  if (err instanceof DOMException && err.name === "TimeoutError") {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string }) : null;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

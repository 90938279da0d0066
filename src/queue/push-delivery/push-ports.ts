// What the pusher needs from the outside, in queue vocabulary: a way to POST (outbound HTTP, in
// src/outbound/), a signer for the JWT each push carries, and a place to report outcomes (metrics).
import type { GroupAddress } from "../namespace.js";

/** How one push ended. `blocked`: the destination is no longer on the operator's allow-list. */
export type PushOutcome =
  "success" | "http_3xx" | "http_4xx" | "http_5xx" | "timeout" | "connection_error" | "blocked";

export interface PushResponse {
  readonly outcome: Exclude<PushOutcome, "blocked">;
  /** The HTTP status, when one was received. */
  readonly status: number | null;
}

export interface PushTransport {
  /**
   * POSTs once. Never follows a redirect; the whole exchange (connect, headers, body) is
   * bounded by `timeoutMs`; the response body is read up to a small cap and dropped.
   */
  post(
    url: string,
    headers: Readonly<Record<string, string>>,
    body: Uint8Array,
    timeoutMs: number,
  ): Promise<PushResponse>;
  close(): Promise<void>;
}

export interface PushSigner {
  /** A short-lived JWT for a push to `audience` (the push URL) about `subject`. */
  sign(audience: string, subject: string): Promise<string>;
}

export interface PushObserver {
  pushed(outcome: PushOutcome, seconds: number): void;
  /** One more (+1) or one fewer (-1) push in flight on this gateway. */
  inFlight(delta: 1 | -1): void;
  /** The latest outcome for a group (push health). */
  groupOutcome(group: GroupAddress, outcome: PushOutcome, atMs: number): void;
}

export const NO_PUSH_OBSERVER: PushObserver = {
  pushed: () => undefined,
  inFlight: () => undefined,
  groupOutcome: () => undefined,
};

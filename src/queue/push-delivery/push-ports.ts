// What the pusher needs from the outside, in queue vocabulary: a way to POST (outbound HTTP, in
// src/outbound/), a signer for the JWT each push carries, and a place to report outcomes (metrics).
import type { GroupAddress } from "../namespace.js";

/**
 * How one push ended (the metrics' label). `blocked`: nothing was sent, since the destination
 * is no longer on the namespace's allow-lists or its name resolved to an address not allowed.
 */
export type PushOutcome =
  "success" | "http_3xx" | "http_4xx" | "http_5xx" | "timeout" | "connection_error" | "blocked";

/**
 * What push health (`lastFailure`) tells the tenant about a failed push: which step failed,
 * never the status, the answer's text or the address reached, so that a group's push health
 * cannot be used to map what listens where.
 */
export type PushFailure =
  "destination_not_allowed" | "connect_failed" | "timeout" | "http_3xx" | "http_4xx" | "http_5xx";

/** The push health entry of an outcome. */
export function pushHealthOutcome(outcome: PushOutcome): "success" | PushFailure {
  if (outcome === "blocked") return "destination_not_allowed";
  if (outcome === "connection_error") return "connect_failed";
  return outcome;
}

export interface PushResponse {
  readonly outcome: PushOutcome;
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

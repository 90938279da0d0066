// Every metric the gateway exports, declared in one place into an injected registry. Names are in
// base units; labels are bounded (route templates, status codes, operations), never topic names.
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from "prom-client";
import type { QueueObserver } from "./queue/observer.js";

export interface Metrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<"method" | "route" | "status_code">;
  readonly natsConnected: Gauge;
  readonly observer: QueueObserver;
}

export function createMetrics(registry: Registry): Metrics {
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: "vqs_http_request_duration_seconds",
    help: "HTTP request duration by method, route template and status code.",
    labelNames: ["method", "route", "status_code"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const published = new Counter({
    name: "vqs_messages_published_total",
    help: "Messages stored by publish.",
    registers: [registry],
  });
  const deduplicated = new Counter({
    name: "vqs_messages_deduplicated_total",
    help: "Publishes dropped as duplicates of a live message with the same idempotency key.",
    registers: [registry],
  });
  const delivered = new Counter({
    name: "vqs_messages_delivered_total",
    help: "Messages handed to consumers; redelivery=true for delivery counts above 1.",
    labelNames: ["redelivery"],
    registers: [registry],
  });
  const acknowledged = new Counter({
    name: "vqs_messages_acknowledged_total",
    help: "Messages acknowledged by consumers.",
    registers: [registry],
  });
  const natsConnected = new Gauge({
    name: "vqs_nats_connected",
    help: "1 while this gateway is connected to NATS, else 0.",
    registers: [registry],
  });
  return {
    registry,
    httpDuration,
    natsConnected,
    observer: {
      published: (duplicate) => (duplicate ? deduplicated : published).inc(),
      delivered: (deliveryCount) =>
        delivered.inc({ redelivery: deliveryCount > 1 ? "true" : "false" }),
      acknowledged: () => acknowledged.inc(),
    },
  };
}

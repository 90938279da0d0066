// Bounds and defaults of a consumer group's settings body. A module that imports nothing: the
// API's schemas (src/api/settings.ts) are built from it, and the domain's settings
// (consumer-settings.ts) take their shapes from those schemas.

/** Bounds and defaults of the settings body, one entry per field. */
export const SETTINGS_LIMITS = {
  pushUrlMaxLength: 2048,
  maxConcurrency: { min: 1, max: 1000, default: 10 },
  timeoutSeconds: { min: 1, max: 3600, default: 300 },
  autoAck: { default: false },
  afterSeconds: { min: 0, max: 86_400, default: 60 },
  initialDelaySeconds: { min: 0, max: 604_800, default: 0 },
  /** The minimum is the document's own afterSeconds. */
  maxBackoffSeconds: { max: 86_400, default: 3600 },
  maxDeliveries: { min: 1, max: 1000 },
  /** flowControl.key: a header name (lowercased), as HTTP tokens are written. */
  flowKeyMaxLength: 64,
  flowConcurrency: { min: 1, max: 1000 },
  flowRateLimit: { min: 1, max: 100_000 },
  flowRatePeriodSeconds: { min: 1, max: 86_400 },
  flowRateBurst: { min: 1, max: 100_000 },
} as const;

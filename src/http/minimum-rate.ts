// A transfer's minimum rate: at least `minBytesPerSecond` over each `windowMs`, or its connection
// is closed. Uploads have one (plugins/upload-watchdog.ts, VQS_MIN_UPLOAD_*) and large-body
// downloads another (routes/messages/download-rate.ts, VQS_MIN_DOWNLOAD_*), each with its own
// settings so that an operator can loosen one direction without the other.

export interface MinimumRate {
  readonly minBytesPerSecond: number;
  /** The window the rate is measured over (60 s by default). */
  readonly windowMs: number;
}

// One store operation as the adapter runs it: timed for vqs_jetstream_request_duration_seconds
// under its name, and its failures translated into the error catalogue (toStorageError).
import { toStorageError } from "./errors.js";

export type ObserveOperation = (operation: string, seconds: number) => void;

export async function storeOp<T>(
  observe: ObserveOperation,
  operation: string,
  fn: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } catch (err) {
    throw toStorageError(err);
  } finally {
    observe(operation, (performance.now() - started) / 1000);
  }
}

// Translates NATS and JetStream failures into the error catalogue, keeping the cause. Anything
// the store could not do is "storage unavailable" (503, retryable), never a 500 with internals.
import { AppError, isAppError } from "../errors.js";

export function toStorageError(err: unknown): AppError {
  if (isAppError(err)) return err;
  return new AppError("storage_unavailable", { cause: err });
}

/** Runs a store operation, translating its failures. */
export async function storage<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw toStorageError(err);
  }
}

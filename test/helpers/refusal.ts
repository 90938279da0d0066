// The refusal an admission rule answers with: the AppError thrown (or rejected), failing the
// test when the operation was admitted instead, and rethrowing anything else.
import { AppError } from "../../src/errors.js";

export async function refusal(p: Promise<unknown> | undefined): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("admitted");
}

export function refused(f: () => unknown): AppError {
  try {
    f();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("admitted");
}

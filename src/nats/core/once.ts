// A value made once and shared (a created stream, an opened bucket), made again after a failure
// or when the caller learns it is gone.
export class Once<T> {
  #value: Promise<T> | null = null;

  get(make: () => Promise<T>): Promise<T> {
    this.#value ??= make().catch((err: unknown) => {
      this.#value = null;
      throw err;
    });
    return this.#value;
  }

  reset(): void {
    this.#value = null;
  }
}

// usePoll: load now, then again every `intervalMs` while the page is visible, one request at a
// time; refresh() loads at once. The last good answer stays shown while a later one fails.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Polled<T> {
  readonly data: T | null;
  readonly error: Error | null;
  /** When the last answer (good or not) arrived. */
  readonly updatedAt: number | null;
  readonly refresh: () => void;
}

export function usePoll<T>(
  load: () => Promise<T>,
  intervalMs: number | null,
  deps: readonly unknown[],
): Polled<T> {
  const [state, setState] = useState<{
    data: T | null;
    error: Error | null;
    updatedAt: number | null;
  }>({ data: null, error: null, updatedAt: null });
  const kick = useRef<() => void>(() => {});

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    let again = false;
    setState({ data: null, error: null, updatedAt: null });
    const run = async () => {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      clearTimeout(timer);
      running = true;
      try {
        const data = await load();
        if (!stopped) setState({ data, error: null, updatedAt: Date.now() });
      } catch (err) {
        if (!stopped) {
          setState((s) => ({
            data: s.data,
            error: err instanceof Error ? err : new Error(String(err)),
            updatedAt: Date.now(),
          }));
        }
      } finally {
        running = false;
      }
      if (stopped) return;
      if (again) {
        again = false;
        void run();
      } else if (intervalMs !== null) {
        timer = setTimeout(tick, intervalMs);
      }
    };
    const tick = () => {
      // A hidden tab does not poll; it catches up when shown again.
      if (document.hidden) timer = setTimeout(tick, intervalMs ?? 1000);
      else void run();
    };
    const onVisible = () => {
      if (!document.hidden && intervalMs !== null) void run();
    };
    kick.current = () => void run();
    document.addEventListener("visibilitychange", onVisible);
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
    // The caller's deps decide when the loader changes.
  }, [intervalMs, ...deps]);

  const refresh = useCallback(() => kick.current(), []);
  return { ...state, refresh };
}

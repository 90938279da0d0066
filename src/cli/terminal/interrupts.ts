// Ctrl-C as commands see it. By default the first SIGINT ends the process (nothing of ours
// runs); a command that has something to finish (tail's settling, a redrive's round) takes
// it over: the first SIGINT then aborts the command's signal, and a second one still ends the
// process at once (exit 130), so the user is never stuck.

export interface Interrupts {
  /** Takes Ctrl-C over for the rest of the run: the signal aborts on the first one. */
  take(): AbortSignal;
}

/** SIGINT of this process (main.ts). */
export function processInterrupts(proc: NodeJS.Process): Interrupts {
  let controller: AbortController | null = null;
  return {
    take() {
      if (controller) return controller.signal;
      const c = new AbortController();
      controller = c;
      proc.on("SIGINT", () => {
        if (c.signal.aborted) proc.exit(130);
        c.abort(new DOMException("interrupted", "AbortError"));
      });
      return c.signal;
    },
  };
}

/** No Ctrl-C (tests in process): a signal that never aborts. */
export const noInterrupts: Interrupts = {
  take: () => new AbortController().signal,
};

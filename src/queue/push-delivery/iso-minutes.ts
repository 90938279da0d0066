// ISO 8601 timestamps with exactly Date.prototype.toISOString's text, from a prefix made once per
// minute: a push's CloudEvent carries four of them, and `new Date(ms).toISOString()` costs about
// 0.5 µs each here (2 µs of a push's ~66 µs of gateway CPU; docs/performance.md, "Issue 23, push,
// fifth round"). One instance per field, so each keeps its own minute.

/** 9999-12-31T23:59:59.999Z: beyond it (and before 1970) toISOString itself answers. */
const MAX_MS = 253_402_300_799_999;

export class IsoMinutes {
  #minute = NaN;
  /** "YYYY-MM-DDTHH:mm:" of #minute. */
  #prefix = "";

  format(ms: number): string {
    if (!(ms >= 0 && ms <= MAX_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
    const minute = Math.floor(ms / 60_000);
    if (minute !== this.#minute) {
      this.#minute = minute;
      this.#prefix = new Date(minute * 60_000).toISOString().slice(0, 17);
    }
    const rest = ms - minute * 60_000;
    const s = Math.floor(rest / 1000);
    const milli = rest - s * 1000;
    return `${this.#prefix}${s < 10 ? "0" : ""}${s}.${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
  }
}

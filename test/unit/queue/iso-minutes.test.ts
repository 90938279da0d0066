// IsoMinutes gives exactly toISOString's text: across minutes, at the edges of seconds, minutes,
// days and years, out of order, and outside four-digit years (where toISOString answers).
import { describe, expect, it } from "vitest";
import { IsoMinutes } from "../../../src/queue/push-delivery/iso-minutes.js";

describe("IsoMinutes", () => {
  it("formats as toISOString does", () => {
    const iso = new IsoMinutes();
    const edges = [
      0,
      1,
      999,
      1000,
      59_999,
      60_000,
      86_399_999,
      86_400_000,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
      Date.UTC(2028, 1, 29, 12, 0, 0, 7),
      253_402_300_799_999,
      253_402_300_800_000,
      -1,
      -62_198_755_200_000,
      1.5,
      NaN,
    ];
    let seed = 12345;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const now = Date.now();
    const samples = [
      ...edges,
      ...Array.from({ length: 5000 }, () => Math.floor(now + (random() - 0.5) * 4e5)),
      ...Array.from({ length: 5000 }, () => Math.floor(random() * 253_402_300_799_999)),
    ];
    for (const ms of samples) {
      if (Number.isNaN(ms)) {
        expect(() => iso.format(ms)).toThrow(RangeError);
        continue;
      }
      expect(iso.format(ms)).toBe(new Date(ms).toISOString());
    }
  });
});

// Numbers, sizes, ages and times as the console shows them, and a group's flow control in words.
import type { FlowControlSettings } from "./types.js";

const count = new Intl.NumberFormat("en-US");

export function formatCount(n: number | null | undefined): string {
  return typeof n === "number" && Number.isFinite(n) ? count.format(n) : "–";
}

export function formatBytes(n: number | null | undefined): string {
  if (typeof n !== "number" || !Number.isFinite(n)) return "–";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A duration in seconds, short: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function formatAge(seconds: number | null | undefined): string {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** How long ago an ISO time was ("–" for null). */
export function ageOf(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return "–";
  const t = Date.parse(iso);
  return Number.isNaN(t) ? "–" : formatAge((now - t) / 1000);
}

/** An ISO time in the browser's time zone, to the second. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** A rate per second: "0", "0.5", "12", "1,234". */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return "0";
  return perSecond < 10
    ? String(Math.round(perSecond * 10) / 10)
    : formatCount(Math.round(perSecond));
}

/** A group's flow control in words: "by tenant: 1 in flight per key, 10 per 60 s (burst 5), ordered". */
export function describeFlow(f: FlowControlSettings): string {
  const limits: string[] = [];
  if (f.concurrency !== null) limits.push(`${formatCount(f.concurrency)} in flight per key`);
  if (f.rate) {
    const burst = f.rate.burst !== f.rate.limit ? ` (burst ${formatCount(f.rate.burst)})` : "";
    limits.push(`${formatCount(f.rate.limit)} per ${formatAge(f.rate.periodSeconds)}${burst}`);
  }
  if (f.ordered) limits.push("ordered");
  return `by ${f.key}: ${limits.join(", ")}`;
}

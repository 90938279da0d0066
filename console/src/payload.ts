// How a message's payload is shown: JSON pretty-printed, UTF-8 text as it is, anything else as a
// hex dump. Pure functions (no DOM), unit-tested in test/unit/console-payload.test.ts.

export type PayloadKind = "json" | "text" | "hex";

export interface RenderedPayload {
  readonly kind: PayloadKind;
  readonly text: string;
  /** Only the first bytes are shown (a preview of a larger message). */
  readonly truncated: boolean;
}

export function base64ToBytes(b64: string): Uint8Array<ArrayBuffer> {
  const binary = atob(b64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * UTF-8 text, or null when the bytes are not text: invalid UTF-8, or control characters other
 * than tab, line feed, carriage return and form feed. A cut preview may end inside a character:
 * up to 3 trailing bytes are then left out.
 */
export function decodeText(bytes: Uint8Array, cut: boolean): string | null {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  for (let drop = 0; drop <= (cut ? 3 : 0) && drop <= bytes.length; drop++) {
    try {
      const text = decoder.decode(bytes.subarray(0, bytes.length - drop));
      // eslint-disable-next-line no-control-regex
      return /[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(text) ? null : text;
    } catch {
      // try one byte shorter
    }
  }
  return null;
}

function looksJson(contentType: string | null, text: string): boolean {
  if (contentType && /[/+]json\b/i.test(contentType)) return true;
  return /^\s*[{[]/.test(text);
}

/** `size` is the whole payload's size: more than the bytes given means they are a preview. */
export function renderPayload(
  bytes: Uint8Array,
  contentType: string | null,
  size: number = bytes.length,
): RenderedPayload {
  const truncated = size > bytes.length;
  const text = decodeText(bytes, truncated);
  if (text === null) return { kind: "hex", text: hexDump(bytes), truncated };
  if (!truncated && looksJson(contentType, text)) {
    try {
      return { kind: "json", text: JSON.stringify(JSON.parse(text), null, 2), truncated };
    } catch {
      // not JSON after all: shown as text
    }
  }
  return { kind: "text", text, truncated };
}

/** A preview from the peek answer (text, or base64 for bytes that are not UTF-8). */
export function renderPreview(p: {
  readonly preview: string;
  readonly previewEncoding: "utf8" | "base64";
  readonly contentType: string | null;
  readonly size: number;
}): RenderedPayload {
  const bytes =
    p.previewEncoding === "base64" ? base64ToBytes(p.preview) : new TextEncoder().encode(p.preview);
  return renderPayload(bytes, p.contentType, p.size);
}

/** `00000000  7b 22 61 22 3a 31 7d 00  ...  |{"a":1}.|`, 16 bytes a line, at most `max` bytes. */
export function hexDump(bytes: Uint8Array, max = 4096): string {
  const lines: string[] = [];
  const end = Math.min(bytes.length, max);
  for (let offset = 0; offset < end; offset += 16) {
    const row = bytes.subarray(offset, Math.min(offset + 16, end));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, "0"));
    const left = hex.slice(0, 8).join(" ");
    const right = hex.slice(8).join(" ");
    const ascii = Array.from(row, (b) =>
      b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".",
    ).join("");
    lines.push(
      `${offset.toString(16).padStart(8, "0")}  ${left.padEnd(23)}  ${right.padEnd(23)}  |${ascii}|`,
    );
  }
  if (bytes.length > end) lines.push(`… ${bytes.length - end} more bytes`);
  return lines.join("\n");
}

/** One line for a table cell: the rendered text with whitespace runs folded, cut at `max`. */
export function oneLine(r: RenderedPayload, max = 120): string {
  const source = r.kind === "hex" ? r.text.split("\n")[0]!.slice(10, 59).trim() : r.text;
  const folded = source.replace(/\s+/g, " ").trim();
  return folded.length > max ? `${folded.slice(0, max - 1)}…` : folded + (r.truncated ? "…" : "");
}

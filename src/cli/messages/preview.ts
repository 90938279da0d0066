// How `vqs receive` and `vqs tail` show a payload in one line: UTF-8 text that is printable
// (line breaks and tabs written as \n, \r, \t), else hex bytes; cut to a width. Full payloads
// are in --json (base64).

export interface Preview {
  readonly kind: "text" | "binary" | "empty";
  /** One line, at most the width asked for. */
  readonly text: string;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Not text to show: controls other than tab and line breaks (C0, DEL, C1), unassigned and
 * private-use code points (bytes that happen to be valid UTF-8 often land there).
 */
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\p{Cn}\p{Co}]/u;

export function preview(payload: Uint8Array, width: number): Preview {
  const w = Math.max(width, 8);
  if (payload.length === 0) return { kind: "empty", text: "(empty)" };
  const text = utf8Text(payload);
  if (text !== null) {
    const flat = text.replace(/\r/g, "\\r").replace(/\n/g, "\\n").replace(/\t/g, "\\t");
    return { kind: "text", text: cut(flat, w) };
  }
  return { kind: "binary", text: hexLine(payload, w) };
}

/** The payload as text when it is valid UTF-8 without control characters, else null. */
export function utf8Text(payload: Uint8Array): string | null {
  let text: string;
  try {
    text = decoder.decode(payload);
  } catch {
    return null;
  }
  return UNPRINTABLE.test(text) ? null : text;
}

/** `hex 00 ff 10 ...`: as many bytes as the width holds, "…" when some are left out. */
function hexLine(payload: Uint8Array, width: number): string {
  const room = Math.max(1, Math.floor((width - "hex".length - " …".length) / 3));
  const shown = Array.from(payload.subarray(0, room), (b) => b.toString(16).padStart(2, "0"));
  return `hex ${shown.join(" ")}${payload.length > room ? " …" : ""}`;
}

/** At most `width` code points, the last one "…" when the text was longer. */
function cut(text: string, width: number): string {
  const points = [...text];
  return points.length <= width ? text : `${points.slice(0, width - 1).join("")}…`;
}

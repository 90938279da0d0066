// The consumer group name of a `vercel.json` functions entry: the same name `@vercel/queue`'s dev
// mode gives it (its unexported `filePathToConsumerGroup`, 0.6.0), so a group synced here and the
// one the client uses in development are the same group. Written here, not copied at runtime;
// test/unit/cli/triggers.test.ts and test/integration/cli/triggers.test.ts hold it equal
// to the client's own output.
//
// Per code point: `_` -> `__`, `/` -> `_S`, `.` -> `_D`, A-Z a-z 0-9 `-` kept, anything else
// `_` + the hex of its first UTF-16 unit (upper case, at least 2 digits). Faithful to the
// client, including its two quirks: a character outside the Basic Multilingual Plane keeps only
// its high surrogate (`😀` -> `_D83D`), and the mapping is not injective (`.0` and `Ð` are both
// `_D0`). The result only ever holds A-Z a-z 0-9 `_` `-`: a valid group name when 1-255 long.

export function filePathToConsumerGroup(filePath: string): string {
  let out = "";
  for (const char of filePath) {
    if (char === "_") out += "__";
    else if (char === "/") out += "_S";
    else if (char === ".") out += "_D";
    else if (/^[A-Za-z0-9-]$/.test(char)) out += char;
    else out += "_" + char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

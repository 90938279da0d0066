// Peek at a topic's messages, oldest first, without leasing them: a preview per row, the whole
// payload on demand (JSON pretty-printed, text, or a hex dump for bytes) up to 1 MiB, and a
// download of any payload as a file (a large one is streamed, never rendered: see download.ts).
import { useEffect, useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { formatBytes, formatTime } from "../format.js";
import {
  base64ToBytes,
  oneLine,
  renderPayload,
  renderPreview,
  type RenderedPayload,
} from "../payload.js";
import type { PeekedMessage } from "../types.js";
import { fileName, payloadBlob, PEEKABLE_BYTES, saveBlob } from "../download.js";
import { ErrorText } from "./ui.js";

const PAGE = 20;

export function MessagesPanel({
  topic,
  version,
}: {
  readonly topic: string;
  readonly version: number;
}) {
  const { api } = useConsole();
  const [messages, setMessages] = useState<readonly PeekedMessage[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);

  useEffect(() => {
    let stale = false;
    setLoading(true);
    api.peek(topic, { limit: PAGE }).then(
      (page) => {
        if (stale) return;
        setMessages(page.messages);
        setNext(page.next);
        setError(null);
        setLoading(false);
      },
      (e: Error) => {
        if (stale) return;
        setError(e);
        setLoading(false);
      },
    );
    return () => {
      stale = true;
    };
  }, [api, topic, version, reloads]);

  const more = async () => {
    if (!next || !messages) return;
    setLoading(true);
    try {
      const page = await api.peek(topic, { after: next, limit: PAGE });
      setMessages([...messages, ...page.messages]);
      setNext(page.next);
      setError(null);
    } catch (e) {
      setError(e as Error);
    } finally {
      setLoading(false);
    }
  };

  return (
    <section class="card" aria-labelledby="messages-title">
      <div class="card-head">
        <h2 id="messages-title">Messages</h2>
        <span class="muted">Peeking leases nothing and changes no delivery count.</span>
        <button
          type="button"
          class="secondary"
          onClick={() => setReloads(reloads + 1)}
          disabled={loading}
        >
          Refresh messages
        </button>
      </div>
      <ErrorText error={error} />
      {messages && messages.length === 0 ? <p class="muted">No messages.</p> : null}
      {messages && messages.length > 0 ? (
        <div class="table-wrap">
          <table class="messages">
            <caption class="visually-hidden">Messages of {topic}, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">Published</th>
                <th scope="col">Message ID</th>
                <th scope="col">Type</th>
                <th scope="col" class="num">
                  Size
                </th>
                <th scope="col">Preview</th>
                <th scope="col">
                  <span class="visually-hidden">Payload</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {messages.map((m, i) => (
                <MessageRow
                  key={m.messageId}
                  topic={topic}
                  message={m}
                  previous={i > 0 ? messages[i - 1]!.messageId : null}
                  open={open === m.messageId}
                  onToggle={() => setOpen(open === m.messageId ? null : m.messageId)}
                />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {next ? (
        <button type="button" class="secondary" onClick={() => void more()} disabled={loading}>
          Load more
        </button>
      ) : null}
    </section>
  );
}

function MessageRow({
  topic,
  message: m,
  previous,
  open,
  onToggle,
}: {
  readonly topic: string;
  readonly message: PeekedMessage;
  /** The message before it in the list: the peek's `after` to fetch this one alone. */
  readonly previous: string | null;
  readonly open: boolean;
  readonly onToggle: () => void;
}) {
  const preview = renderPreview(m);
  const detailId = `payload-${m.messageId}`;
  return (
    <>
      <tr class={open ? "open" : undefined}>
        <td class="nowrap">{formatTime(m.timestamp)}</td>
        <td>
          <code class="id" title={m.messageId}>
            {m.messageId}
          </code>
        </td>
        <td class="nowrap">{m.contentType ?? "–"}</td>
        <td class="num">{formatBytes(m.size)}</td>
        <td class="preview">
          <span class={`kind kind-${preview.kind}`}>{preview.kind}</span> {oneLine(preview)}
          {m.deadLetter ? (
            <div class="muted small">
              dead letter of {m.deadLetter.topic} / {m.deadLetter.consumerGroup} after{" "}
              {m.deadLetter.deliveryCount} deliveries
            </div>
          ) : null}
        </td>
        <td>
          <button
            type="button"
            class="secondary small"
            aria-expanded={open}
            aria-controls={open ? detailId : undefined}
            aria-label={`${open ? "Hide" : "View"} the payload of ${m.messageId}`}
            onClick={onToggle}
          >
            {open ? "Hide" : "View"}
          </button>
        </td>
      </tr>
      {open ? (
        <tr class="detail" id={detailId}>
          <td colSpan={6}>
            <Payload topic={topic} message={m} previous={previous} preview={preview} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function Payload({
  topic,
  message: m,
  previous,
  preview,
}: {
  readonly topic: string;
  readonly message: PeekedMessage;
  readonly previous: string | null;
  readonly preview: RenderedPayload;
}) {
  const { api } = useConsole();
  // A preview that is the whole payload needs no request; a large payload is never shown whole.
  const large = m.size > PEEKABLE_BYTES;
  const [full, setFull] = useState<RenderedPayload | null>(() =>
    preview.truncated ? null : wholeFromPreview(m),
  );
  const [error, setError] = useState<string | null>(null);
  const [downloading, setDownloading] = useState(false);
  const download = async () => {
    setDownloading(true);
    setError(null);
    try {
      saveBlob(await payloadBlob(api, topic, m, previous), fileName(m));
    } catch (e) {
      setError(`The download failed: ${(e as Error).message}`);
    } finally {
      setDownloading(false);
    }
  };
  useEffect(() => {
    if (full || large) return;
    let stale = false;
    // The whole payload: the one message after its predecessor, with payload=full.
    api.peek(topic, { after: previous, limit: 1, full: true }).then(
      (page) => {
        if (stale) return;
        const found = page.messages.find((x) => x.messageId === m.messageId);
        if (found?.payload !== undefined) {
          setFull(renderPayload(base64ToBytes(found.payload), m.contentType, m.size));
        } else if (found) {
          // Kept in the large-body store: a peek carries its start only.
          setError("Only the start of this payload is shown: download it to see it whole.");
        } else {
          setError(
            "The message is no longer there (expired, purged or removed): its preview is shown.",
          );
        }
      },
      (e: Error) => {
        if (!stale) setError(e.message);
      },
    );
    return () => {
      stale = true;
    };
  }, []);
  const shown = full ?? preview;
  return (
    <div class="payload">
      <div class="payload-meta">
        <span class={`kind kind-${shown.kind}`}>{kindLabel(shown.kind)}</span>
        <span class="muted">
          expires {formatTime(m.expiresAt)} · {formatBytes(m.size)}
          {m.deadLetter
            ? ` · dead letter of message ${m.deadLetter.messageId} of ${m.deadLetter.topic}`
            : ""}
        </span>
      </div>
      {error ? <p class="error">{error}</p> : null}
      {large ? (
        <p class="muted">
          A large message: the first bytes are shown. Download it to see it whole.
        </p>
      ) : null}
      <pre class="payload-text" tabIndex={0} aria-label={`Payload of ${m.messageId}`}>
        {shown.text}
        {!full && !error && !large ? "\n… loading the whole payload" : ""}
      </pre>
      <button
        type="button"
        class="secondary small"
        onClick={() => void download()}
        disabled={downloading}
        aria-label={`Download the payload of ${m.messageId}`}
      >
        {downloading ? "Downloading…" : `Download (${formatBytes(m.size)})`}
      </button>
    </div>
  );
}

function wholeFromPreview(m: PeekedMessage): RenderedPayload {
  const bytes =
    m.previewEncoding === "base64" ? base64ToBytes(m.preview) : new TextEncoder().encode(m.preview);
  return renderPayload(bytes, m.contentType, m.size);
}

function kindLabel(kind: RenderedPayload["kind"]): string {
  return kind === "json" ? "JSON" : kind === "text" ? "Text" : "Binary (hex)";
}

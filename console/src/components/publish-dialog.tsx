// Publish a test message: body (text, or base64 for bytes), content type, delay, TTL and
// idempotency key, sent as the v3 API's headers. The API checks every value; its error is shown
// beside the field it names.
import { useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { ApiError } from "../api.js";
import { base64ToBytes } from "../payload.js";
import { useNotify } from "./notify.js";
import { Dialog, errorFor, Field, formError, useAction } from "./ui.js";

const FIELDS = [
  "topic",
  "body",
  "contentType",
  "delaySeconds",
  "retentionSeconds",
  "idempotencyKey",
];

export function PublishDialog({
  topic: fixedTopic,
  onClose,
  onPublished,
}: {
  /** The topic to publish to; absent: the dialog asks for one. */
  readonly topic?: string;
  readonly onClose: () => void;
  readonly onPublished: (messageId: string | null) => void;
}) {
  const { api } = useConsole();
  const notify = useNotify();
  const [topic, setTopic] = useState("");
  const [body, setBody] = useState('{\n  "hello": "world"\n}');
  const [encoding, setEncoding] = useState<"text" | "base64">("text");
  const [contentType, setContentType] = useState("application/json");
  const [delaySeconds, setDelay] = useState("");
  const [retentionSeconds, setRetention] = useState("");
  const [idempotencyKey, setKey] = useState("");
  const action = useAction();
  const target = fixedTopic ?? topic.trim();

  const submit = () =>
    action.run(async () => {
      if (!target) throw new ApiError(400, "invalid_topic_name", "Name the topic.");
      let payload: string | Uint8Array<ArrayBuffer> = body;
      if (encoding === "base64") {
        try {
          payload = base64ToBytes(body.replace(/\s+/g, ""));
        } catch {
          throw new ApiError(400, "invalid_body", "The body is not valid base64.");
        }
      }
      const r = await api.publish(target, {
        body: payload,
        contentType: contentType.trim(),
        delaySeconds: delaySeconds.trim(),
        retentionSeconds: retentionSeconds.trim(),
        idempotencyKey,
      });
      const messageId = "messageId" in r ? r.messageId : null;
      notify(
        "deferred" in r
          ? `Accepted for ${target} (deferred: the region's store is down)`
          : `Published ${messageId ?? ""} to ${target}`,
      );
      onPublished(messageId);
    });

  return (
    <Dialog
      title={fixedTopic ? `Publish a message to ${fixedTopic}` : "Publish a message"}
      onClose={onClose}
      onSubmit={submit}
      error={formError(action.error, FIELDS)}
      wide
      actions={
        <>
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Publishing…" : "Publish"}
          </button>
        </>
      }
    >
      {fixedTopic ? null : (
        <Field
          label="Topic"
          value={topic}
          onValue={setTopic}
          autofocus
          autocomplete="off"
          spellcheck={false}
          error={errorFor(action.error, "topic")}
          hint="A new name creates the topic. 1-255 of A-Z, a-z, 0-9, _ and -."
        />
      )}
      <Field
        label="Body"
        value={body}
        onValue={setBody}
        multiline
        rows={7}
        error={errorFor(action.error, "body")}
        hint="Ctrl+Enter publishes."
      />
      <fieldset class="inline">
        <legend>Body is</legend>
        <label>
          <input
            type="radio"
            name="encoding"
            checked={encoding === "text"}
            onChange={() => setEncoding("text")}
          />{" "}
          text (sent as UTF-8)
        </label>
        <label>
          <input
            type="radio"
            name="encoding"
            checked={encoding === "base64"}
            onChange={() => setEncoding("base64")}
          />{" "}
          base64 (sent as bytes)
        </label>
      </fieldset>
      <div class="grid-2">
        <Field
          label="Content type"
          value={contentType}
          onValue={setContentType}
          list="content-types"
          autocomplete="off"
          spellcheck={false}
          error={errorFor(action.error, "contentType")}
        />
        <Field
          label="Idempotency key (optional)"
          value={idempotencyKey}
          onValue={setKey}
          autocomplete="off"
          spellcheck={false}
          error={errorFor(action.error, "idempotencyKey")}
        />
        <Field
          label="Delay, seconds (optional)"
          value={delaySeconds}
          onValue={setDelay}
          inputMode="numeric"
          autocomplete="off"
          error={errorFor(action.error, "delaySeconds")}
          hint="0 to 604800"
        />
        <Field
          label="TTL, seconds (optional)"
          value={retentionSeconds}
          onValue={setRetention}
          inputMode="numeric"
          autocomplete="off"
          error={errorFor(action.error, "retentionSeconds")}
          hint="60 to 604800; default 86400"
        />
      </div>
      <datalist id="content-types">
        <option value="application/json" />
        <option value="text/plain; charset=utf-8" />
        <option value="application/octet-stream" />
      </datalist>
    </Dialog>
  );
}

// Redrive a dead-letter topic: move its messages back (to where each came from, or to a topic
// named here), up to a limit per round; shows what moved and what remains.
import { useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import type { RedriveResult } from "../types.js";
import { useNotify } from "./notify.js";
import { Dialog, errorFor, Field, formError, useAction } from "./ui.js";

export function RedriveDialog({
  topic,
  onClose,
  onDone,
}: {
  readonly topic: string;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { api } = useConsole();
  const notify = useNotify();
  const [target, setTarget] = useState("");
  const [limit, setLimit] = useState("1000");
  const [result, setResult] = useState<RedriveResult | null>(null);
  const action = useAction();
  const submit = () =>
    action.run(async () => {
      const body: { topic?: string; limit?: number } = {};
      if (target.trim()) body.topic = target.trim();
      // Sent as typed (a number when it is one): the API says what it accepts.
      if (limit.trim())
        body.limit = /^\d+$/.test(limit.trim())
          ? Number(limit.trim())
          : (limit as unknown as number);
      const r = await api.redrive(topic, body);
      setResult(r);
      notify(`Redrive of ${topic}: ${r.moved} moved, ${r.remaining} remaining`);
      onDone();
    });
  return (
    <Dialog
      title={`Redrive ${topic}`}
      onClose={onClose}
      onSubmit={submit}
      error={formError(action.error, ["topic"])}
      actions={
        <>
          <button type="button" class="secondary" onClick={onClose}>
            {result ? "Close" : "Cancel"}
          </button>
          <button
            type="submit"
            class={result ? "secondary" : undefined}
            disabled={action.busy || result?.remaining === 0}
          >
            {action.busy ? "Moving…" : result ? "Redrive again" : "Redrive"}
          </button>
        </>
      }
    >
      <p>
        Moves dead letters of <strong>{topic}</strong> back, oldest first, each as a new message
        (its delivery count starts again at 1) with the time it had left.
      </p>
      <Field
        label="Target topic (optional)"
        value={target}
        onValue={setTarget}
        placeholder="where each message came from"
        autocomplete="off"
        spellcheck={false}
        autofocus
        error={errorFor(action.error, "topic")}
        hint="Empty: each dead letter goes back to its own topic. A name: every message goes there (also messages that are not dead letters)."
      />
      <Field
        label="At most this many messages"
        value={limit}
        onValue={setLimit}
        inputMode="numeric"
        autocomplete="off"
        hint="1 to 10000 per round"
      />
      {result ? (
        <p class="result" role="status">
          Moved <strong data-testid="redrive-moved">{result.moved}</strong>;{" "}
          <strong data-testid="redrive-remaining">{result.remaining}</strong> remaining.
        </p>
      ) : null}
    </Dialog>
  );
}

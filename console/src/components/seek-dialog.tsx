// Seek a consumer group: from the oldest retained message, from now on, or from a time.
import { useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { ApiError } from "../api.js";
import { useNotify } from "./notify.js";
import { Dialog, formError, useAction } from "./ui.js";

type To = "earliest" | "latest" | "time";

export function SeekDialog({
  topic,
  group,
  onClose,
  onDone,
}: {
  readonly topic: string;
  readonly group: string;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { api } = useConsole();
  const notify = useNotify();
  const [to, setTo] = useState<To>("earliest");
  const [time, setTime] = useState(() => localInputValue(new Date(Date.now() - 3600_000)));
  const action = useAction();
  const submit = () =>
    action.run(async () => {
      let target: string = to;
      if (to === "time") {
        const d = new Date(time);
        if (!time || Number.isNaN(d.getTime())) {
          throw new ApiError(400, "invalid_time", "Give a date and time.");
        }
        target = d.toISOString();
      }
      const r = await api.seek(topic, group, target);
      notify(`${group} now reads ${describe(r.to)}`);
      onDone();
    });
  return (
    <Dialog
      title={`Seek ${group}`}
      onClose={onClose}
      onSubmit={submit}
      error={formError(action.error, [])}
      actions={
        <>
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="danger" disabled={action.busy}>
            {action.busy ? "Seeking…" : "Seek"}
          </button>
        </>
      }
    >
      <p>
        Moves where the group <strong>{group}</strong> of <strong>{topic}</strong> reads next. Its
        outstanding receipt handles stop working (409): messages in flight are delivered again.
      </p>
      <fieldset>
        <legend>Read next</legend>
        <label>
          <input
            type="radio"
            name="seek"
            checked={to === "earliest"}
            onChange={() => setTo("earliest")}
            autofocus
          />{" "}
          from the oldest retained message (replay)
        </label>
        <label>
          <input
            type="radio"
            name="seek"
            checked={to === "latest"}
            onChange={() => setTo("latest")}
          />{" "}
          only messages published from now on (skip the backlog)
        </label>
        <label>
          <input type="radio" name="seek" checked={to === "time"} onChange={() => setTo("time")} />{" "}
          from a time on:
        </label>
        <input
          type="datetime-local"
          step={1}
          aria-label="Time to read from (your time zone)"
          value={time}
          disabled={to !== "time"}
          onInput={(e) => setTime((e.target as HTMLInputElement).value)}
        />
      </fieldset>
    </Dialog>
  );
}

function describe(to: string): string {
  if (to === "earliest") return "from the oldest retained message";
  if (to === "latest") return "from new messages only";
  return `from ${new Date(to).toLocaleString()}`;
}

/** A Date as a datetime-local input's value, in the browser's time zone. */
function localInputValue(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

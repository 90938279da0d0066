// Edit a consumer group's settings document (push, retry, dead letters, flow control) as a form
// or as JSON. Values are sent as typed, and the API's validation is the only one: its 400/403
// message is shown beside the field it names (or under the JSON).
import { useEffect, useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { ApiError } from "../api.js";
import type { EffectiveSettings, SettingsDocument } from "../types.js";
import { useNotify } from "./notify.js";
import { Dialog, errorFor, ErrorText, Field, formError, useAction } from "./ui.js";

const FORM_FIELDS = [
  "group",
  "push.url",
  "push.maxConcurrency",
  "push.timeoutSeconds",
  "push.autoAck",
  "retry.afterSeconds",
  "retry.initialDelaySeconds",
  "retry.maxBackoffSeconds",
  "deadLetter.topic",
  "deadLetter.maxDeliveries",
  "flowControl",
  "flowControl.key",
  "flowControl.concurrency",
  "flowControl.rate",
  "flowControl.rate.limit",
  "flowControl.rate.periodSeconds",
  "flowControl.rate.burst",
  "flowControl.ordered",
];

interface Form {
  readonly mode: "poll" | "push";
  readonly url: string;
  readonly maxConcurrency: string;
  readonly timeoutSeconds: string;
  readonly autoAck: boolean;
  readonly afterSeconds: string;
  readonly initialDelaySeconds: string;
  readonly maxBackoffSeconds: string;
  readonly deadLetter: boolean;
  readonly deadLetterTopic: string;
  readonly maxDeliveries: string;
  /** Flow control: all empty (and not ordered) is none. */
  readonly flowKey: string;
  readonly flowConcurrency: string;
  readonly rateLimit: string;
  readonly ratePeriodSeconds: string;
  readonly rateBurst: string;
  readonly ordered: boolean;
}

const EMPTY: Form = {
  mode: "poll",
  url: "",
  maxConcurrency: "",
  timeoutSeconds: "",
  autoAck: false,
  afterSeconds: "",
  initialDelaySeconds: "",
  maxBackoffSeconds: "",
  deadLetter: false,
  deadLetterTopic: "",
  maxDeliveries: "",
  flowKey: "",
  flowConcurrency: "",
  rateLimit: "",
  ratePeriodSeconds: "",
  rateBurst: "",
  ordered: false,
};

/** The form of a settings body or document (missing fields empty, values as text). */
function formOf(doc: unknown): Form {
  const obj = (v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  const text = (v: unknown): string =>
    typeof v === "string"
      ? v
      : typeof v === "number" || typeof v === "boolean"
        ? String(v)
        : v === undefined || v === null
          ? ""
          : JSON.stringify(v);
  const b = obj(doc);
  if (!b) return EMPTY;
  const push = obj(b.push);
  const retry = obj(b.retry) ?? {};
  const dead = obj(b.deadLetter);
  const flow = obj(b.flowControl);
  const rate = obj(flow?.rate);
  return {
    mode: push ? "push" : "poll",
    url: text(push?.url),
    maxConcurrency: text(push?.maxConcurrency),
    timeoutSeconds: text(push?.timeoutSeconds),
    autoAck: push?.autoAck === true,
    afterSeconds: text(retry.afterSeconds),
    initialDelaySeconds: text(retry.initialDelaySeconds),
    maxBackoffSeconds: text(retry.maxBackoffSeconds),
    deadLetter: dead !== null,
    deadLetterTopic: text(dead?.topic),
    maxDeliveries: text(dead?.maxDeliveries),
    flowKey: text(flow?.key),
    flowConcurrency: text(flow?.concurrency),
    rateLimit: text(rate?.limit),
    ratePeriodSeconds: text(rate?.periodSeconds),
    rateBurst: text(rate?.burst),
    ordered: flow?.ordered === true,
  };
}

/** A number when the text is one; otherwise the text itself, for the API to refuse by name. */
function value(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  return /^-?\d+(\.\d+)?$/.test(t) ? Number(t) : t;
}

function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** The flowControl of a form: null when every field of it is empty, else as typed. */
function flowControlOf(f: Form): Record<string, unknown> | null {
  const rate = [f.rateLimit, f.ratePeriodSeconds, f.rateBurst].some((t) => t.trim() !== "")
    ? compact({
        limit: value(f.rateLimit),
        periodSeconds: value(f.ratePeriodSeconds),
        burst: value(f.rateBurst),
      })
    : undefined;
  if (f.flowKey.trim() === "" && value(f.flowConcurrency) === undefined && !rate && !f.ordered) {
    return null;
  }
  // The key is sent even when empty: the API's refusal then names it.
  return compact({
    key: f.flowKey.trim(),
    concurrency: value(f.flowConcurrency),
    rate,
    ordered: f.ordered,
  });
}

export function bodyOf(f: Form): Record<string, unknown> {
  return {
    push:
      f.mode === "push"
        ? compact({
            url: f.url.trim(),
            maxConcurrency: value(f.maxConcurrency),
            timeoutSeconds: value(f.timeoutSeconds),
            autoAck: f.autoAck,
          })
        : null,
    retry: compact({
      afterSeconds: value(f.afterSeconds),
      initialDelaySeconds: value(f.initialDelaySeconds),
      maxBackoffSeconds: value(f.maxBackoffSeconds),
    }),
    deadLetter: f.deadLetter
      ? compact({ topic: f.deadLetterTopic.trim(), maxDeliveries: value(f.maxDeliveries) })
      : null,
    flowControl: flowControlOf(f),
  };
}

export function SettingsDialog({
  target,
  group: fixedGroup,
  effective,
  onClose,
  onSaved,
}: {
  /** The topic, or a `prefix*` pattern, the document is stored for. */
  readonly target: string;
  /** The group; absent: the dialog asks for one (new settings). */
  readonly group?: string;
  /** What applies to the group now, when it comes from elsewhere (a pattern). */
  readonly effective?: EffectiveSettings | null;
  readonly onClose: () => void;
  readonly onSaved: () => void;
}) {
  const { api } = useConsole();
  const notify = useNotify();
  const [group, setGroup] = useState(fixedGroup ?? "");
  const [stored, setStored] = useState<SettingsDocument | null | undefined>(
    fixedGroup ? undefined : null,
  );
  const [loadError, setLoadError] = useState<Error | null>(null);
  const [form, setForm] = useState<Form>(EMPTY);
  const [view, setView] = useState<"form" | "json">("form");
  const [json, setJson] = useState("");
  const [confirmDelete, setConfirmDelete] = useState(false);
  const action = useAction();

  useEffect(() => {
    if (!fixedGroup) return;
    api.settings(target, fixedGroup).then(
      (doc) => {
        setStored(doc);
        setForm(formOf(doc ?? effective?.settings ?? null));
      },
      (e: Error) => setLoadError(e),
    );
  }, [api, target, fixedGroup]);

  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });
  const toJson = () => {
    setJson(JSON.stringify(bodyOf(form), null, 2));
    setView("json");
  };
  const toForm = () => {
    try {
      setForm(formOf(JSON.parse(json)));
      action.setError(null);
      setView("form");
    } catch {
      action.setError(new ApiError(400, "invalid_json", "The JSON does not parse: fix it first."));
    }
  };

  const save = () =>
    action.run(async () => {
      const name = group.trim();
      if (!name) throw new ApiError(400, "invalid_consumer_group_name", "Name the consumer group.");
      let body: unknown;
      if (view === "json") {
        try {
          body = JSON.parse(json);
        } catch {
          throw new ApiError(400, "invalid_json", "The JSON does not parse.");
        }
      } else {
        body = bodyOf(form);
      }
      const saved = await api.putSettings(target, name, body);
      notify(`Saved the settings of ${saved.consumerGroup} on ${saved.topic}`);
      onSaved();
    });

  const remove = () =>
    action.run(async () => {
      await api.deleteSettings(target, group);
      notify(`Deleted the settings of ${group} on ${target}`);
      onSaved();
    });

  const e = (field: string) => (view === "form" ? errorFor(action.error, field) : null);
  const fromPattern = stored === null && effective && effective.from !== target ? effective : null;
  return (
    <Dialog
      title={fixedGroup ? `Settings of ${fixedGroup}` : "New consumer settings"}
      onClose={onClose}
      onSubmit={save}
      wide
      error={view === "form" ? formError(action.error, FORM_FIELDS) : null}
      actions={
        <>
          {stored ? (
            <button
              type="button"
              class="danger left"
              disabled={action.busy}
              onClick={() => (confirmDelete ? void remove() : setConfirmDelete(true))}
            >
              {confirmDelete ? "Really delete these settings" : "Delete settings…"}
            </button>
          ) : null}
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy || stored === undefined}>
            {action.busy ? "Saving…" : "Save"}
          </button>
        </>
      }
    >
      <p class="muted">
        On <code>{target}</code>
        {target.endsWith("*") ? " (a pattern: every topic whose name starts with the prefix)" : ""}.
        {stored ? ` Stored ${new Date(stored.updatedAt).toLocaleString()}.` : ""}
        {stored === null && !fromPattern && fixedGroup
          ? " No settings stored: the group is polled, with default retries."
          : ""}
      </p>
      {fromPattern ? (
        <p class="notice">
          Now the settings of the pattern <code>{fromPattern.from}</code> apply. Saving here stores
          a document for <code>{target}</code> alone, which then applies instead.
        </p>
      ) : null}
      <ErrorText error={loadError} />
      {fixedGroup ? null : (
        <Field
          label="Consumer group"
          value={group}
          onValue={setGroup}
          autofocus
          autocomplete="off"
          spellcheck={false}
          error={errorFor(action.error, "group")}
        />
      )}
      <div class="tabs" role="group" aria-label="Edit as">
        <button
          type="button"
          class="secondary"
          aria-pressed={view === "form"}
          onClick={() => view === "json" && toForm()}
        >
          Form
        </button>
        <button
          type="button"
          class="secondary"
          aria-pressed={view === "json"}
          onClick={() => view === "form" && toJson()}
        >
          JSON
        </button>
      </div>
      {stored === undefined && !loadError ? (
        <p class="muted">Loading the stored settings…</p>
      ) : view === "json" ? (
        <Field
          label="Settings document"
          value={json}
          onValue={setJson}
          multiline
          rows={14}
          error={action.error ? formError(action.error, ["group"]) : null}
          hint="The body of PUT …/settings (docs/api.md, Consumer settings). Ctrl+Enter saves."
        />
      ) : (
        <>
          <fieldset>
            <legend>Delivery</legend>
            <label>
              <input
                type="radio"
                name="mode"
                checked={form.mode === "poll"}
                onChange={() => set({ mode: "poll" })}
                autofocus={!!fixedGroup}
              />{" "}
              Polled: consumers receive through the API
            </label>
            <label>
              <input
                type="radio"
                name="mode"
                checked={form.mode === "push"}
                onChange={() => set({ mode: "push" })}
              />{" "}
              Pushed: every gateway POSTs each message to a URL
            </label>
            {form.mode === "push" ? (
              <div class="grid-3">
                <Field
                  label="Push URL"
                  value={form.url}
                  onValue={(url) => set({ url })}
                  type="url"
                  autocomplete="off"
                  spellcheck={false}
                  error={e("push.url")}
                />
                <Field
                  label="Max concurrency"
                  value={form.maxConcurrency}
                  onValue={(v) => set({ maxConcurrency: v })}
                  inputMode="numeric"
                  placeholder="10"
                  error={e("push.maxConcurrency")}
                />
                <Field
                  label="Timeout, seconds"
                  value={form.timeoutSeconds}
                  onValue={(v) => set({ timeoutSeconds: v })}
                  inputMode="numeric"
                  placeholder="300"
                  error={e("push.timeoutSeconds")}
                />
                <label class="check">
                  <input
                    type="checkbox"
                    checked={form.autoAck}
                    onChange={(ev) => set({ autoAck: (ev.target as HTMLInputElement).checked })}
                  />{" "}
                  Acknowledge on 2xx (autoAck)
                </label>
              </div>
            ) : null}
          </fieldset>
          <fieldset>
            <legend>Retry (pushes)</legend>
            <div class="grid-3">
              <Field
                label="After, seconds"
                value={form.afterSeconds}
                onValue={(v) => set({ afterSeconds: v })}
                inputMode="numeric"
                placeholder="60"
                error={e("retry.afterSeconds")}
              />
              <Field
                label="Initial delay, seconds"
                value={form.initialDelaySeconds}
                onValue={(v) => set({ initialDelaySeconds: v })}
                inputMode="numeric"
                placeholder="0"
                error={e("retry.initialDelaySeconds")}
              />
              <Field
                label="Max backoff, seconds"
                value={form.maxBackoffSeconds}
                onValue={(v) => set({ maxBackoffSeconds: v })}
                inputMode="numeric"
                placeholder="3600"
                error={e("retry.maxBackoffSeconds")}
              />
            </div>
          </fieldset>
          <fieldset>
            <legend>Dead letters</legend>
            <label class="check">
              <input
                type="checkbox"
                checked={form.deadLetter}
                onChange={(ev) => set({ deadLetter: (ev.target as HTMLInputElement).checked })}
              />{" "}
              Move a message that keeps failing to a dead-letter topic
            </label>
            {form.deadLetter ? (
              <div class="grid-2">
                <Field
                  label="Dead-letter topic"
                  value={form.deadLetterTopic}
                  onValue={(v) => set({ deadLetterTopic: v })}
                  autocomplete="off"
                  spellcheck={false}
                  error={e("deadLetter.topic")}
                />
                <Field
                  label="Max deliveries"
                  value={form.maxDeliveries}
                  onValue={(v) => set({ maxDeliveries: v })}
                  inputMode="numeric"
                  error={e("deadLetter.maxDeliveries")}
                  hint="Delivered this often, the next delivery moves it."
                />
              </div>
            ) : null}
          </fieldset>
          <fieldset>
            <legend>Flow control (per key)</legend>
            <p class="hint">
              Limits for each key: the value of a message header. Leave every field empty for no
              flow control.
            </p>
            <FieldError error={e("flowControl")} />
            <div class="grid-2">
              <Field
                label="Key header"
                value={form.flowKey}
                onValue={(v) => set({ flowKey: v })}
                autocomplete="off"
                spellcheck={false}
                placeholder="tenant-id"
                error={e("flowControl.key")}
              />
              <Field
                label="Concurrency per key"
                value={form.flowConcurrency}
                onValue={(v) => set({ flowConcurrency: v })}
                inputMode="numeric"
                error={e("flowControl.concurrency")}
                hint="Messages of one key in flight at once; empty: no limit."
              />
            </div>
            <FieldError error={e("flowControl.rate")} />
            <div class="grid-3">
              <Field
                label="Rate limit"
                value={form.rateLimit}
                onValue={(v) => set({ rateLimit: v })}
                inputMode="numeric"
                error={e("flowControl.rate.limit")}
                hint="Hand-outs of one key per period."
              />
              <Field
                label="Rate period, seconds"
                value={form.ratePeriodSeconds}
                onValue={(v) => set({ ratePeriodSeconds: v })}
                inputMode="numeric"
                error={e("flowControl.rate.periodSeconds")}
              />
              <Field
                label="Rate burst"
                value={form.rateBurst}
                onValue={(v) => set({ rateBurst: v })}
                inputMode="numeric"
                error={e("flowControl.rate.burst")}
                hint="At once after a quiet time; empty: the limit."
              />
            </div>
            <label class="check">
              <input
                type="checkbox"
                checked={form.ordered}
                onChange={(ev) => set({ ordered: (ev.target as HTMLInputElement).checked })}
              />{" "}
              Ordered: one message of a key in flight, in publish order
            </label>
            <FieldError error={e("flowControl.ordered")} />
          </fieldset>
        </>
      )}
    </Dialog>
  );
}

/** An error about a group of fields (not one input), shown where the group is. */
function FieldError({ error }: { readonly error: string | null }) {
  return error ? (
    <p class="field-error" role="alert">
      {error}
    </p>
  ) : null;
}

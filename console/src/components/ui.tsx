// Small building blocks: a modal dialog on the native <dialog> element (focus kept inside,
// Escape cancels, Enter submits its form, focus returns to the opener on close), labelled form
// fields with their error in place, and status text.
import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { ApiError } from "../api.js";

export interface DialogProps {
  readonly title: string;
  readonly onClose: () => void;
  /** The form's submit (Enter, or the submit button); the dialog stays open while it runs. */
  readonly onSubmit?: () => Promise<void> | void;
  readonly children: ComponentChildren;
  /** The buttons: give the main one type="submit". */
  readonly actions: ComponentChildren;
  readonly wide?: boolean;
  /** Shown above the buttons; role=alert so it is read out. */
  readonly error?: string | null;
}

export function Dialog({ title, onClose, onSubmit, children, actions, wide, error }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current!;
    if (!dialog.open) dialog.showModal();
    return () => dialog.close();
  }, []);
  const submit = (e: Event) => {
    e.preventDefault();
    void onSubmit?.();
  };
  const cancel = (e: Event) => {
    // Escape: the page decides (it unmounts the dialog), so the state and the DOM agree.
    e.preventDefault();
    onClose();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    // Ctrl/Cmd+Enter submits from a multi-line field too.
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && onSubmit) {
      e.preventDefault();
      void onSubmit();
    }
  };
  return (
    <dialog
      ref={ref}
      class={wide ? "wide" : undefined}
      aria-labelledby={titleId}
      onCancel={cancel}
      onKeyDown={onKeyDown}
    >
      <form onSubmit={submit} noValidate>
        <h2 id={titleId}>{title}</h2>
        <div class="dialog-body">{children}</div>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <div class="dialog-actions">{actions}</div>
      </form>
    </dialog>
  );
}

/** Runs an action once at a time, keeping its error (an ApiError's message) for display. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const run = async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    if (busy) return undefined;
    setBusy(true);
    setError(null);
    try {
      return await action();
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/** The error to show beside `field`, when the action's API error names it. */
export function errorFor(error: Error | null, field: string): string | null {
  return error instanceof ApiError && error.field === field ? error.message : null;
}

/** The error to show for the whole form: one that names no field of `fields`. */
export function formError(error: Error | null, fields: readonly string[]): string | null {
  if (!error) return null;
  if (error instanceof ApiError && error.field && fields.includes(error.field)) return null;
  return error instanceof ApiError ? `${error.message} (${error.code})` : error.message;
}

export interface FieldProps {
  readonly label: string;
  readonly value: string;
  readonly onValue: (value: string) => void;
  readonly error?: string | null;
  readonly hint?: ComponentChildren;
  readonly multiline?: boolean;
  readonly rows?: number;
  readonly type?: "text" | "url" | "search";
  readonly inputMode?: "text" | "numeric";
  readonly autocomplete?: "off";
  readonly spellcheck?: boolean;
  readonly placeholder?: string;
  readonly autofocus?: boolean;
  /** The id of a <datalist> of suggestions. */
  readonly list?: string;
}

/** A labelled input (or textarea) with its hint and its error below it. */
export function Field(props: FieldProps) {
  const { label, value, onValue, error, hint, multiline, rows } = props;
  const id = useId();
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""]
    .filter(Boolean)
    .join(" ");
  const common = {
    id,
    value,
    autofocus: props.autofocus,
    placeholder: props.placeholder,
    "aria-invalid": error ? ("true" as const) : undefined,
    "aria-describedby": described || undefined,
  };
  return (
    <div class={error ? "field invalid" : "field"}>
      <label for={id}>{label}</label>
      {multiline ? (
        <textarea
          {...common}
          rows={rows ?? 6}
          spellcheck={false}
          autocomplete="off"
          onInput={(e) => onValue((e.target as HTMLTextAreaElement).value)}
        />
      ) : (
        <input
          {...common}
          type={props.type ?? "text"}
          inputMode={props.inputMode}
          autocomplete={props.autocomplete}
          spellcheck={props.spellcheck}
          list={props.list}
          onInput={(e) => onValue((e.target as HTMLInputElement).value)}
        />
      )}
      {hint ? (
        <div class="hint" id={`${id}-hint`}>
          {hint}
        </div>
      ) : null}
      {error ? (
        <div class="field-error" id={`${id}-error`} role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}

export function ErrorText({ error }: { readonly error: Error | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof ApiError ? `${error.message} (${error.code})` : error.message}
    </p>
  );
}

/** "updated 3 s ago" for a polled view, with its last error. */
export function Freshness({ updatedAt, error }: { updatedAt: number | null; error: Error | null }) {
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, []);
  if (updatedAt === null) return <span class="muted">loading…</span>;
  const s = Math.max(0, Math.round((Date.now() - updatedAt) / 1000));
  return (
    <span class={error ? "stale" : "muted"} title={error?.message}>
      {error ? `not updated: ${error.message}` : s < 2 ? "updated just now" : `updated ${s} s ago`}
    </span>
  );
}

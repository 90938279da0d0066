// Confirmation of a destructive action: what it does, a button naming it (focused, so Enter
// confirms and Escape cancels), and for the worst ones the name to type first.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { Dialog, Field, formError, useAction } from "./ui.js";

export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  typeToConfirm,
  onConfirm,
  onClose,
}: {
  readonly title: string;
  readonly children: ComponentChildren;
  readonly confirmLabel: string;
  /** A name the user types before the button works. */
  readonly typeToConfirm?: string;
  readonly onConfirm: () => Promise<void>;
  readonly onClose: () => void;
}) {
  const [typed, setTyped] = useState("");
  const action = useAction();
  const ready = !typeToConfirm || typed === typeToConfirm;
  return (
    <Dialog
      title={title}
      onClose={onClose}
      onSubmit={() => (ready ? action.run(onConfirm) : undefined)}
      error={formError(action.error, [])}
      actions={
        <>
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            class="danger"
            disabled={action.busy || !ready}
            autofocus={!typeToConfirm}
          >
            {action.busy ? "Working…" : confirmLabel}
          </button>
        </>
      }
    >
      {children}
      {typeToConfirm ? (
        <Field
          label={`Type ${typeToConfirm} to confirm`}
          value={typed}
          onValue={setTyped}
          autofocus
          autocomplete="off"
          spellcheck={false}
        />
      ) : null}
    </Dialog>
  );
}

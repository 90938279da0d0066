// The signed-in console's session and the API client made from it, shared through a context: the
// app (app.tsx) provides it, the pages and dialogs it renders read it. A module of its own, so
// that they import it without importing the app that imports them.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Api } from "./api.js";
import type { Session } from "./session.js";

export interface ConsoleContext {
  readonly api: Api;
  readonly session: Session;
}

export const ConsoleContext = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const c = useContext(ConsoleContext);
  if (!c) throw new Error("useConsole outside the signed-in console");
  return c;
}

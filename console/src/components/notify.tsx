// Short confirmations of what an action did ("Purged 12 messages"), in a polite live region so
// screen readers announce them; each fades after a few seconds.
import { createContext, type ComponentChildren } from "preact";
import { useCallback, useContext, useRef, useState } from "preact/hooks";

type Notify = (message: string) => void;

const NotifyContext = createContext<Notify>(() => {});

export function useNotify(): Notify {
  return useContext(NotifyContext);
}

export function NotifyProvider({ children }: { readonly children: ComponentChildren }) {
  const [messages, setMessages] = useState<readonly { id: number; text: string }[]>([]);
  const next = useRef(0);
  const notify = useCallback((text: string) => {
    const id = next.current++;
    setMessages((m) => [...m.slice(-3), { id, text }]);
    setTimeout(() => setMessages((m) => m.filter((x) => x.id !== id)), 6000);
  }, []);
  return (
    <NotifyContext.Provider value={notify}>
      {children}
      <div class="toasts" role="status" aria-live="polite">
        {messages.map((m) => (
          <div class="toast" key={m.id}>
            {m.text}
          </div>
        ))}
      </div>
    </NotifyContext.Provider>
  );
}

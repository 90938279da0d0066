// The console: signed out, the sign-in page; signed in, the top bar (pages, namespace, sign out)
// and the page of the current route. The session (token, deployment ID, operator's namespace)
// is shared with the API client made from it through the context of console-context.ts.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Api } from "./api.js";
import { NotifyProvider } from "./components/notify.js";
import { ConsoleContext, useConsole } from "./console-context.js";
import { SettingsPage } from "./pages/settings.js";
import { SignInPage } from "./pages/sign-in.js";
import { TopicPage } from "./pages/topic.js";
import { TopicsPage } from "./pages/topics.js";
import { Link, navigate, hrefOf, useRoute, type Route } from "./router.js";
import { loadSession, saveSession, tokenClaims, type Session } from "./session.js";
import type { NamespaceInfo } from "./types.js";

export function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [notice, setNotice] = useState<string | null>(null);
  const signIn = (s: Session) => {
    saveSession(s);
    setSession(s);
    setNotice(null);
  };
  const signOut = (reason: string | null) => {
    saveSession(null);
    setSession(null);
    setNotice(reason);
  };
  const api = useMemo(
    () =>
      session
        ? new Api(session, (e) =>
            signOut(`Signed out: the gateway refused the token (${e.message})`),
          )
        : null,
    [session],
  );
  return (
    <NotifyProvider>
      {session && api ? (
        <ConsoleContext.Provider value={{ api, session }}>
          <Shell
            onSignOut={() => signOut(null)}
            onNamespace={(namespace) => {
              signIn({ ...session, namespace });
              navigate(hrefOf({ page: "topics" }));
            }}
          />
        </ConsoleContext.Provider>
      ) : (
        <SignInPage onSignIn={signIn} notice={notice} />
      )}
    </NotifyProvider>
  );
}

function Shell({
  onSignOut,
  onNamespace,
}: {
  readonly onSignOut: () => void;
  readonly onNamespace: (label: string) => void;
}) {
  const route = useRoute();
  const { session } = useConsole();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    // After a move to another page, keyboard and screen reader users start at its content.
    if (first.current) first.current = false;
    else main.current?.focus();
  }, [route]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link to={{ page: "topics" }} class="brand">
          vqs <span>console</span>
        </Link>
        <nav aria-label="Pages">
          <Link to={{ page: "topics" }} aria-current={current(route, "topics")}>
            Topics
          </Link>
          <Link to={{ page: "settings" }} aria-current={current(route, "settings")}>
            Consumer settings
          </Link>
        </nav>
        <div class="identity">
          {session.operator ? (
            <NamespacePicker value={session.namespace} onChange={onNamespace} />
          ) : (
            <span class="muted" title="The namespace of your token">
              {identityOf(session)}
            </span>
          )}
          <button type="button" class="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

function current(route: Route, page: "topics" | "settings"): "page" | undefined {
  if (page === "topics" && (route.page === "topics" || route.page === "topic")) return "page";
  return route.page === page ? "page" : undefined;
}

function Page({ route }: { readonly route: Route }) {
  switch (route.page) {
    case "topics":
      return <TopicsPage />;
    case "topic":
      return <TopicPage key={route.topic} topic={route.topic} />;
    case "settings":
      return <SettingsPage />;
    case "not-found":
      return (
        <section>
          <h1>Not found</h1>
          <p>
            The console has no page at <code>{route.path}</code>.{" "}
            <Link to={{ page: "topics" }}>See the topics</Link>.
          </p>
        </section>
      );
  }
}

/** team/project/environment[ · deployment] from the token's usual claims, for display. */
function identityOf(session: Session): string {
  const c = tokenClaims(session.token) ?? {};
  const parts = [c.owner_id, c.project_id, c.environment].filter(
    (p): p is string => typeof p === "string",
  );
  const who = parts.length === 3 ? parts.join("/") : typeof c.sub === "string" ? c.sub : "token";
  return session.deploymentId ? `${who} · deployment ${session.deploymentId}` : who;
}

/** Operators: the namespace the console acts in (Vqs-Namespace), "" for the token's own. */
function NamespacePicker({
  value,
  onChange,
}: {
  readonly value: string;
  readonly onChange: (label: string) => void;
}) {
  const { session } = useConsole();
  const [namespaces, setNamespaces] = useState<readonly NamespaceInfo[] | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    // The list is the operator's view of the region, whatever namespace is chosen.
    new Api({ ...session, namespace: "" })
      .namespaces()
      .then(setNamespaces, (e: Error) => setFailed(e.message));
  }, [session.token]);
  const known = namespaces?.some((n) => n.label === value) ?? false;
  return (
    <label class="namespace">
      <span>Namespace</span>
      <select
        value={value}
        title={failed ?? undefined}
        onChange={(e) => onChange((e.target as HTMLSelectElement).value)}
      >
        <option value="">{identityOf({ ...session, namespace: "" })} (token’s own)</option>
        {value && !known ? <option value={value}>{decodeLabel(value)}</option> : null}
        {(namespaces ?? []).map((n) => (
          <option key={n.label} value={n.label}>
            {decodeLabel(n.label)} ({n.topics} {n.topics === 1 ? "topic" : "topics"})
          </option>
        ))}
      </select>
    </label>
  );
}

function decodeLabel(label: string): string {
  return label
    .split("/")
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    })
    .join(" / ");
}

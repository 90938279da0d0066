// Sign in by pasting a token (and, optionally, a deployment ID). The token is tried against the
// management API before it is kept; an operator's token is recognised by GET /api/v3/namespaces.
// In development the gateway offers a token of its own (GET /console/dev-token).
import { useEffect, useState } from "preact/hooks";
import { Api, ApiError, fetchDevToken } from "../api.js";
import { errorFor, Field, formError, useAction } from "../components/ui.js";
import type { Session } from "../session.js";

export function SignInPage({
  onSignIn,
  notice,
}: {
  readonly onSignIn: (s: Session) => void;
  readonly notice: string | null;
}) {
  const [token, setToken] = useState("");
  const [deploymentId, setDeploymentId] = useState("");
  const [devToken, setDevToken] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    document.title = "Sign in · vqs console";
    void fetchDevToken().then(setDevToken);
  }, []);

  const signIn = (tokenToUse: string) =>
    action.run(async () => {
      const t = tokenToUse.trim().replace(/^Bearer\s+/i, "");
      if (!t) throw new ApiError(0, "missing_token", "Paste a token first.");
      const credentials = { token: t, deploymentId: deploymentId.trim(), namespace: "" };
      const api = new Api(credentials);
      await api.listTopics(null, 1);
      const operator = await api.namespaces().then(
        () => true,
        (e: unknown) => {
          if (e instanceof ApiError && (e.status === 403 || e.status === 404)) return false;
          throw e;
        },
      );
      onSignIn({ ...credentials, operator });
    });

  const tokenError =
    action.error instanceof ApiError &&
    (action.error.status === 401 || action.error.code === "missing_token")
      ? action.error.message
      : null;
  const deploymentError = errorFor(action.error, "deploymentId");
  return (
    <main id="main" class="sign-in">
      <h1>
        vqs <span>console</span>
      </h1>
      <p class="lead">See and steer the queues your token may see.</p>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void signIn(token);
        }}
        noValidate
      >
        <Field
          label="Token"
          value={token}
          onValue={setToken}
          multiline
          rows={4}
          error={tokenError}
          hint="A JWT as your apps send it (Authorization: Bearer …). It is kept in this tab only (sessionStorage) and sent to this gateway only."
        />
        <Field
          label="Deployment ID (optional)"
          value={deploymentId}
          onValue={setDeploymentId}
          autocomplete="off"
          spellcheck={false}
          error={deploymentError}
          hint="Each deployment is its own namespace (Vqs-Deployment-Id). Empty: the deploymentless one."
        />
        {tokenError || deploymentError ? null : (
          <ErrorLine text={formError(action.error, ["deploymentId"])} />
        )}
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Signing in…" : "Sign in"}
          </button>
        </div>
      </form>
      {devToken ? (
        <section class="dev-token" aria-labelledby="dev-token-title">
          <h2 id="dev-token-title">Development</h2>
          <p>
            This gateway runs in development mode and signs its own tokens (the ones{" "}
            <code>npm run token</code> prints).
          </p>
          <button
            type="button"
            class="secondary"
            disabled={action.busy}
            onClick={() => {
              setToken(devToken);
              void signIn(devToken);
            }}
          >
            Sign in with the development token
          </button>
        </section>
      ) : null}
    </main>
  );
}

function ErrorLine({ text }: { readonly text: string | null }) {
  return text ? (
    <p class="error" role="alert">
      {text}
    </p>
  ) : null;
}

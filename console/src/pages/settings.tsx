// Every consumer settings document of the namespace (GET /api/v3/settings), patterns included,
// with an editor for each and for a new one.
import { useEffect, useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { SettingsDialog } from "../components/settings-dialog.js";
import { ErrorText, Field, Freshness } from "../components/ui.js";
import { describeFlow, formatTime } from "../format.js";
import { usePoll } from "../poll.js";
import { Link } from "../router.js";

export function SettingsPage() {
  const { api } = useConsole();
  const list = usePoll(() => api.allSettings(), 10_000, [api]);
  const [editing, setEditing] = useState<{ target: string; group?: string } | null>(null);
  const [newTarget, setNewTarget] = useState("");
  const [asking, setAsking] = useState(false);
  useEffect(() => {
    document.title = "Consumer settings · vqs console";
  }, []);
  const docs = list.data ?? [];
  return (
    <section aria-labelledby="settings-title">
      <div class="page-head">
        <h1 id="settings-title">Consumer settings</h1>
        <div class="toolbar">
          <Freshness updatedAt={list.updatedAt} error={list.error} />
          <button type="button" onClick={() => setAsking(!asking)} aria-expanded={asking}>
            New settings…
          </button>
        </div>
      </div>
      <p class="muted">
        Push destinations, retry timing, dead letters and flow control, per topic (or every topic of
        a <code>prefix*</code> pattern) and consumer group. Without a document a group is polled.
      </p>
      {asking ? (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (newTarget.trim()) setEditing({ target: newTarget.trim() });
          }}
        >
          <Field
            label="Topic or pattern"
            value={newTarget}
            onValue={setNewTarget}
            placeholder="orders, or orders_*"
            autocomplete="off"
            spellcheck={false}
            autofocus
          />
          <button type="submit">Continue…</button>
        </form>
      ) : null}
      {list.data === null ? <ErrorText error={list.error} /> : null}
      {list.data && docs.length === 0 ? <p>No settings are stored in this namespace.</p> : null}
      {docs.length ? (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Consumer settings documents</caption>
            <thead>
              <tr>
                <th scope="col">Topic or pattern</th>
                <th scope="col">Group</th>
                <th scope="col">Delivery</th>
                <th scope="col">Retry</th>
                <th scope="col">Dead letters</th>
                <th scope="col">Stored</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {docs.map((d) => (
                <tr key={`${d.topic} ${d.consumerGroup}`}>
                  <th scope="row">
                    {d.topic.endsWith("*") ? (
                      <code>{d.topic}</code>
                    ) : (
                      <Link to={{ page: "topic", topic: d.topic }}>{d.topic}</Link>
                    )}
                  </th>
                  <td>{d.consumerGroup}</td>
                  <td>
                    {d.push ? (
                      <>
                        push to <span class="url">{d.push.url}</span>
                        <div class="muted small">
                          at most {d.push.maxConcurrency} at once, {d.push.timeoutSeconds} s timeout
                          {d.push.autoAck ? ", autoAck" : ""}
                        </div>
                      </>
                    ) : (
                      "polled"
                    )}
                    {d.flowControl ? (
                      <div class="muted small">flow control {describeFlow(d.flowControl)}</div>
                    ) : null}
                  </td>
                  <td class="small">
                    after {d.retry.afterSeconds} s
                    {d.retry.initialDelaySeconds
                      ? `, first after ${d.retry.initialDelaySeconds} s`
                      : ""}
                    , up to {d.retry.maxBackoffSeconds} s
                  </td>
                  <td>
                    {d.deadLetter
                      ? `→ ${d.deadLetter.topic} after ${d.deadLetter.maxDeliveries}`
                      : "–"}
                  </td>
                  <td class="nowrap">{formatTime(d.updatedAt)}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      class="secondary small"
                      aria-label={`Edit the settings of ${d.consumerGroup} on ${d.topic}`}
                      onClick={() => setEditing({ target: d.topic, group: d.consumerGroup })}
                    >
                      Edit…
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {editing ? (
        <SettingsDialog
          target={editing.target}
          {...(editing.group ? { group: editing.group } : {})}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            setAsking(false);
            list.refresh();
          }}
        />
      ) : null}
    </section>
  );
}

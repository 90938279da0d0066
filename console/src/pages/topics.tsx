// The topics of the namespace with their counts, refreshed every few seconds, a page at a time.
import { useEffect, useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { PublishDialog } from "../components/publish-dialog.js";
import { ErrorText, Freshness } from "../components/ui.js";
import { ageOf, formatBytes, formatCount } from "../format.js";
import { usePoll } from "../poll.js";
import { Link } from "../router.js";
import type { Topic, TopicPage } from "../types.js";

const PAGE_SIZE = 50;

/** The namespace's storage against its quota: a tenant sees a full quota coming. */
function StorageUse({ storage: s }: { storage: TopicPage["storage"] }) {
  const topic = s.topicLimitBytes ? `, at most ${formatBytes(s.topicLimitBytes)} per topic` : "";
  // Large bodies count against the quota but are not in any topic's size: say how much they are.
  const large = s.largeBodyBytes ? ` (large bodies ${formatBytes(s.largeBodyBytes)})` : "";
  if (!s.limitBytes)
    return (
      <p class="storage-use">
        Storage: {formatBytes(s.usedBytes)}
        {large}
        {topic}
      </p>
    );
  const pct = Math.floor((100 * s.usedBytes) / s.limitBytes);
  return (
    <p class="storage-use">
      Storage: {formatBytes(s.usedBytes)} of {formatBytes(s.limitBytes)} ({pct}%){large}
      {topic} <meter min={0} max={s.limitBytes} high={0.8 * s.limitBytes} value={s.usedBytes} />
    </p>
  );
}
const REFRESH_MS = 3000;

export function TopicsPage() {
  const { api } = useConsole();
  // The cursors of the pages walked through: the last one is the page shown.
  const [cursors, setCursors] = useState<readonly (string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const [paused, setPaused] = useState(false);
  const [filter, setFilter] = useState("");
  const [publishing, setPublishing] = useState(false);
  const page = usePoll(() => api.listTopics(cursor, PAGE_SIZE), paused ? null : REFRESH_MS, [
    api,
    cursor,
  ]);
  useEffect(() => {
    document.title = "Topics · vqs console";
  }, []);

  const topics = page.data?.topics ?? [];
  const shown = filter ? topics.filter((t) => t.name.includes(filter.trim())) : topics;
  const deadLetterTopics = new Set(
    topics.flatMap((t) => t.settings.map((s) => s.deadLetterTopic).filter((d) => d !== null)),
  );
  return (
    <section aria-labelledby="topics-title">
      <div class="page-head">
        <h1 id="topics-title">Topics</h1>
        <div class="toolbar">
          <Freshness updatedAt={page.updatedAt} error={page.error} />
          <button type="button" class="secondary" onClick={() => setPaused(!paused)}>
            {paused ? "Resume auto-refresh" : "Pause auto-refresh"}
          </button>
          <button type="button" onClick={() => setPublishing(true)}>
            Publish a message…
          </button>
        </div>
      </div>
      {page.data === null ? <ErrorText error={page.error} /> : null}
      {page.data ? <StorageUse storage={page.data.storage} /> : null}
      <div class="filter">
        <label for="topic-filter">Filter this page</label>
        <input
          id="topic-filter"
          type="search"
          value={filter}
          placeholder="part of a topic name"
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
        />
      </div>
      {page.data && topics.length === 0 && cursors.length === 1 ? (
        <div class="empty">
          <p>No topics in this namespace yet. A topic exists from its first message:</p>
          <button type="button" onClick={() => setPublishing(true)}>
            Publish a message…
          </button>
        </div>
      ) : (
        <div class="table-wrap">
          <table class="topics">
            <caption class="visually-hidden">
              Topics, {shown.length} shown, refreshed every {REFRESH_MS / 1000} seconds
            </caption>
            <thead>
              <tr>
                <th scope="col">Topic</th>
                <th scope="col" class="num">
                  Messages
                </th>
                <th scope="col" class="num">
                  Delayed
                </th>
                <th scope="col" class="num">
                  Groups
                </th>
                <th scope="col" class="num">
                  Oldest
                </th>
                <th scope="col" class="num">
                  Last publish
                </th>
                <th scope="col" class="num">
                  Size
                </th>
                <th scope="col">Settings</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((t) => (
                <TopicRow key={t.name} topic={t} deadLetters={deadLetterTopics.has(t.name)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label="Pages of topics">
        <button
          type="button"
          class="secondary"
          disabled={cursors.length === 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          ← Previous
        </button>
        <span class="muted">Page {cursors.length}</span>
        <button
          type="button"
          class="secondary"
          disabled={!page.data?.nextCursor}
          onClick={() => page.data?.nextCursor && setCursors([...cursors, page.data.nextCursor])}
        >
          Next →
        </button>
      </nav>
      {publishing ? (
        <PublishDialog
          onClose={() => setPublishing(false)}
          onPublished={() => {
            setPublishing(false);
            page.refresh();
          }}
        />
      ) : null}
    </section>
  );
}

function TopicRow({
  topic: t,
  deadLetters,
}: {
  readonly topic: Topic;
  readonly deadLetters: boolean;
}) {
  const pushed = t.settings.filter((s) => s.push).length;
  const dlq = [...new Set(t.settings.map((s) => s.deadLetterTopic).filter((d) => d !== null))];
  return (
    <tr>
      <th scope="row">
        <Link to={{ page: "topic", topic: t.name }}>{t.name}</Link>
      </th>
      <td class="num" data-label="messages">
        {formatCount(t.messages)}
      </td>
      <td class="num">{formatCount(t.delayed)}</td>
      <td class="num">{formatCount(t.consumerGroups)}</td>
      <td class="num">{ageOf(t.oldestMessageAt)}</td>
      <td class="num">{t.newestMessageAt ? `${ageOf(t.newestMessageAt)} ago` : "–"}</td>
      <td class="num">{formatBytes(t.bytes)}</td>
      <td>
        {pushed ? <span class="badge">{pushed} pushed</span> : null}
        {dlq.map((d) => (
          <span class="badge" key={d}>
            dead letters → {d}
          </span>
        ))}
        {deadLetters ? <span class="badge warn">dead-letter topic</span> : null}
      </td>
    </tr>
  );
}

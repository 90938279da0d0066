// One topic: its counts, a chart of backlog and throughput over the last minutes (samples of
// this page's polls, kept in memory), its consumer groups, the busiest keys of those with flow
// control, its messages, and the actions: publish, purge, redrive, delete; per group: settings,
// seek, delete.
import { useEffect, useRef, useState } from "preact/hooks";
import { useConsole } from "../console-context.js";
import { ApiError } from "../api.js";
import { ActivityChart, type Sample } from "../components/chart.js";
import { ConfirmDialog } from "../components/confirm-dialog.js";
import { MessagesPanel } from "../components/messages.js";
import { useNotify } from "../components/notify.js";
import { PublishDialog } from "../components/publish-dialog.js";
import { RedriveDialog } from "../components/redrive-dialog.js";
import { SeekDialog } from "../components/seek-dialog.js";
import { SettingsDialog } from "../components/settings-dialog.js";
import { ErrorText, Freshness } from "../components/ui.js";
import { ageOf, describeFlow, formatAge, formatBytes, formatCount } from "../format.js";
import { usePoll } from "../poll.js";
import { hrefOf, Link, navigate } from "../router.js";
import type {
  BusiestKeys,
  EffectiveSettings,
  FlowControlSettings,
  Group,
  Topic,
} from "../types.js";

const REFRESH_MS = 2000;
const HISTORY_MINUTES = 5;
/** Keys listed per group with flow control. */
const KEYS_SHOWN = 10;
/**
 * The busiest keys are read again at most this often: each read samples up to 1,000 key records
 * and 1,000 messages per group, too much for every 2 s refresh of every open page.
 */
const KEYS_REFRESH_MS = 6000;

type Open =
  | { readonly kind: "publish" | "purge" | "delete" | "redrive" | "new-settings" }
  | { readonly kind: "seek" | "delete-group"; readonly group: string }
  | {
      readonly kind: "settings";
      readonly group: string;
      readonly effective: EffectiveSettings | null;
    };

interface Snapshot {
  readonly topic: Topic;
  readonly groups: readonly Group[];
  /** The busiest keys of each group with flow control, by name (or why they could not be read). */
  readonly keys: ReadonlyMap<string, BusiestKeys | Error>;
}

export function TopicPage({ topic: name }: { readonly topic: string }) {
  const { api } = useConsole();
  const notify = useNotify();
  const [open, setOpen] = useState<Open | null>(null);
  const [messagesVersion, setMessagesVersion] = useState(0);
  const [samples, setSamples] = useState<readonly Sample[]>([]);
  const lastRaw = useRef<{ t: number; deliveries: number; messages: number } | null>(null);
  const lastKeys = useRef<{ at: number; keys: Snapshot["keys"] } | null>(null);
  const poll = usePoll<Snapshot>(
    async () => {
      const [topic, groups] = await Promise.all([api.topic(name), api.groups(name)]);
      const keyed = groups.filter((g) => g.settings?.flowControl);
      const last = lastKeys.current;
      const fresh =
        last !== null &&
        Date.now() - last.at < KEYS_REFRESH_MS &&
        keyed.length === last.keys.size &&
        keyed.every((g) => last.keys.has(g.name));
      if (fresh) return { topic, groups, keys: last.keys };
      const keys = new Map(
        await Promise.all(
          keyed.map(async (g) => {
            const k = await api.keys(name, g.name, KEYS_SHOWN).catch((e: unknown) => {
              return e instanceof Error ? e : new Error(String(e));
            });
            return [g.name, k] as const;
          }),
        ),
      );
      lastKeys.current = { at: Date.now(), keys };
      return { topic, groups, keys };
    },
    REFRESH_MS,
    [api, name],
  );
  useEffect(() => {
    document.title = `${name} · vqs console`;
  }, [name]);

  // One sample per answer: counts now, rates since the previous answer.
  useEffect(() => {
    if (!poll.data || poll.updatedAt === null) return;
    const t = poll.updatedAt / 1000;
    const backlog = sum(poll.data.groups, (g) => g.backlog);
    const inFlight = sum(poll.data.groups, (g) => g.inFlight);
    const deliveries = sum(poll.data.groups, (g) => g.deliveries);
    const messages = poll.data.topic.messages + poll.data.topic.delayed;
    const prev = lastRaw.current;
    const dt = prev ? t - prev.t : 0;
    const rate = (now: number, before: number) => (dt > 0 ? Math.max(0, now - before) / dt : null);
    lastRaw.current = { t, deliveries, messages };
    const sample: Sample = {
      t,
      backlog: poll.data.groups.length ? backlog : poll.data.topic.messages,
      inFlight,
      deliveriesPerSecond: prev ? rate(deliveries, prev.deliveries) : null,
      publishedPerSecond: prev ? rate(messages, prev.messages) : null,
    };
    setSamples((s) => [...s.filter((x) => x.t > t - HISTORY_MINUTES * 60), sample]);
  }, [poll.updatedAt]);

  const changed = () => {
    poll.refresh();
    setMessagesVersion((v) => v + 1);
  };

  if (!poll.data) {
    const missing = poll.error instanceof ApiError && poll.error.code === "topic_not_found";
    return (
      <section>
        <Crumbs name={name} />
        <h1>{name}</h1>
        {missing ? (
          <p>
            There is no topic <strong>{name}</strong> in this namespace (a topic exists from its
            first message, and an empty one is removed after a while).{" "}
            <Link to={{ page: "topics" }}>See the topics</Link>.
          </p>
        ) : poll.error ? (
          <ErrorText error={poll.error} />
        ) : (
          <p class="muted">Loading…</p>
        )}
      </section>
    );
  }

  const { topic, groups, keys } = poll.data;
  const names = new Set(groups.map((g) => g.name));
  // Settings that apply to groups with no consumer yet (stored before anyone received).
  const settingsOnly = topic.settings.filter((s) => !names.has(s.consumerGroup));
  return (
    <section aria-labelledby="topic-title">
      <Crumbs name={name} />
      <div class="page-head">
        <h1 id="topic-title">{topic.name}</h1>
        <div class="toolbar">
          <Freshness updatedAt={poll.updatedAt} error={poll.error} />
          <button type="button" onClick={() => setOpen({ kind: "publish" })}>
            Publish a test message…
          </button>
          <button type="button" class="secondary" onClick={() => setOpen({ kind: "redrive" })}>
            Redrive…
          </button>
          <button type="button" class="danger" onClick={() => setOpen({ kind: "purge" })}>
            Purge…
          </button>
          <button type="button" class="danger" onClick={() => setOpen({ kind: "delete" })}>
            Delete topic…
          </button>
        </div>
      </div>

      <div class="overview">
        <dl class="stats" aria-label="Topic counts">
          <Stat label="Messages" value={formatCount(topic.messages)} testId="topic-messages" />
          <Stat label="Delayed" value={formatCount(topic.delayed)} />
          <Stat label="Consumer groups" value={formatCount(topic.consumerGroups)} />
          <Stat label="Size" value={formatBytes(topic.bytes)} />
          <Stat label="Oldest message" value={ageOf(topic.oldestMessageAt)} />
          <Stat
            label="Last publish"
            value={topic.newestMessageAt ? `${ageOf(topic.newestMessageAt)} ago` : "–"}
          />
        </dl>
        <ActivityChart samples={samples} minutes={HISTORY_MINUTES} />
      </div>

      <section class="card" aria-labelledby="groups-title">
        <div class="card-head">
          <h2 id="groups-title">Consumer groups</h2>
          <button type="button" class="secondary" onClick={() => setOpen({ kind: "new-settings" })}>
            Add settings for a group…
          </button>
        </div>
        {groups.length === 0 && settingsOnly.length === 0 ? (
          <p class="muted">
            No consumer group has received from this topic yet. A group appears with its first
            receive, or with settings.
          </p>
        ) : (
          <div class="table-wrap">
            <table class="groups">
              <caption class="visually-hidden">Consumer groups of {topic.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Group</th>
                  <th scope="col" class="num">
                    Backlog
                  </th>
                  <th scope="col" class="num">
                    In flight
                  </th>
                  <th scope="col" class="num">
                    Oldest unacked
                  </th>
                  <th scope="col" class="num">
                    Deliveries
                  </th>
                  <th scope="col" class="num">
                    Redelivered
                  </th>
                  <th scope="col" class="num">
                    Dead-lettered
                  </th>
                  <th scope="col">Delivery</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {groups.map((g) => (
                  <GroupRow
                    key={g.name}
                    topic={topic.name}
                    from={settingsSource(topic, g.name)}
                    group={g}
                    onOpen={setOpen}
                  />
                ))}
                {settingsOnly.map((s) => (
                  <tr key={`settings-${s.consumerGroup}`}>
                    <th scope="row">{s.consumerGroup}</th>
                    <td colSpan={6} class="muted">
                      no consumer yet
                    </td>
                    <td>
                      {s.push ? "push" : "polled"}
                      {s.deadLetterTopic ? ` · dead letters → ${s.deadLetterTopic}` : ""}
                    </td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="secondary small"
                        aria-label={`Settings of ${s.consumerGroup}`}
                        onClick={() =>
                          setOpen({ kind: "settings", group: s.consumerGroup, effective: null })
                        }
                      >
                        Settings…
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {keys.size ? (
        <section class="card" aria-labelledby="keys-title">
          <div class="card-head">
            <h2 id="keys-title">Busiest keys</h2>
          </div>
          <p class="muted small">
            For each group with flow control: the messages of each key in flight (on any gateway)
            and waiting for their key's room, busiest first.
          </p>
          {groups.map((g) => {
            const k = keys.get(g.name);
            const flow = g.settings?.flowControl;
            return k && flow ? (
              <GroupKeys key={g.name} group={g.name} flow={flow} keys={k} />
            ) : null;
          })}
        </section>
      ) : null}

      <MessagesPanel topic={topic.name} version={messagesVersion} />

      {open?.kind === "publish" ? (
        <PublishDialog
          topic={topic.name}
          onClose={() => setOpen(null)}
          onPublished={() => {
            setOpen(null);
            changed();
          }}
        />
      ) : null}
      {open?.kind === "purge" ? (
        <ConfirmDialog
          title={`Purge ${topic.name}?`}
          confirmLabel="Purge"
          onClose={() => setOpen(null)}
          onConfirm={async () => {
            const r = await api.purge(topic.name);
            notify(
              `Purged ${r.purged} ${r.purged === 1 ? "message" : "messages"} from ${topic.name}`,
            );
            setOpen(null);
            changed();
          }}
        >
          <p>
            Removes every message of <strong>{topic.name}</strong> (
            {formatCount(topic.messages + topic.delayed)} now, delayed ones and idempotency keys
            included), for every consumer group. Groups and settings stay. This cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
      {open?.kind === "delete" ? (
        <ConfirmDialog
          title={`Delete ${topic.name}?`}
          confirmLabel="Delete topic"
          typeToConfirm={topic.name}
          onClose={() => setOpen(null)}
          onConfirm={async () => {
            await api.deleteTopic(topic.name);
            notify(`Deleted ${topic.name}`);
            setOpen(null);
            navigate(hrefOf({ page: "topics" }));
          }}
        >
          <p>
            Removes the topic with its messages, consumer groups, settings and idempotency keys. A
            later publish makes a new, empty topic.
          </p>
        </ConfirmDialog>
      ) : null}
      {open?.kind === "redrive" ? (
        <RedriveDialog topic={topic.name} onClose={() => setOpen(null)} onDone={changed} />
      ) : null}
      {open?.kind === "seek" ? (
        <SeekDialog
          topic={topic.name}
          group={open.group}
          onClose={() => setOpen(null)}
          onDone={() => {
            setOpen(null);
            changed();
          }}
        />
      ) : null}
      {open?.kind === "delete-group" ? (
        <ConfirmDialog
          title={`Delete the group ${open.group}?`}
          confirmLabel="Delete group"
          onClose={() => setOpen(null)}
          onConfirm={async () => {
            await api.deleteGroup(topic.name, open.group);
            notify(`Deleted the group ${open.group}`);
            setOpen(null);
            changed();
          }}
        >
          <p>
            Removes the group's position and leases (its receipt handles then answer 409). Its
            settings stay; its next receive starts a new group at the oldest retained message.
          </p>
        </ConfirmDialog>
      ) : null}
      {open?.kind === "settings" || open?.kind === "new-settings" ? (
        <SettingsDialog
          target={topic.name}
          {...(open.kind === "settings" ? { group: open.group, effective: open.effective } : {})}
          onClose={() => setOpen(null)}
          onSaved={() => {
            setOpen(null);
            changed();
          }}
        />
      ) : null}
    </section>
  );
}

function Crumbs({ name }: { readonly name: string }) {
  return (
    <nav class="crumbs" aria-label="Breadcrumb">
      <Link to={{ page: "topics" }}>Topics</Link> <span aria-hidden="true">/</span>{" "}
      <span aria-current="page">{name}</span>
    </nav>
  );
}

function Stat({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <div class="stat">
      <dt>{label}</dt>
      <dd data-testid={testId}>{value}</dd>
    </div>
  );
}

/** The topic or pattern whose settings apply to a group: the topic's own first. */
function settingsSource(topic: Topic, group: string): string {
  const refs = topic.settings.filter((s) => s.consumerGroup === group);
  return (refs.find((s) => s.topic === topic.name) ?? refs[0])?.topic ?? topic.name;
}

function GroupRow({
  topic,
  from,
  group: g,
  onOpen,
}: {
  readonly topic: string;
  /** Where the group's settings come from (the topic, or a pattern). */
  readonly from: string;
  readonly group: Group;
  readonly onOpen: (o: Open) => void;
}) {
  return (
    <tr>
      <th scope="row">{g.name}</th>
      <td class="num">{formatCount(g.backlog)}</td>
      <td class="num">{formatCount(g.inFlight)}</td>
      <td class="num">
        {g.inFlight > 0 || g.oldestUnacknowledgedAgeSeconds > 0
          ? formatAge(g.oldestUnacknowledgedAgeSeconds)
          : "–"}
      </td>
      <td class="num">{formatCount(g.deliveries)}</td>
      <td class="num">{formatCount(g.redelivered)}</td>
      <td class="num">{formatCount(g.deadLettered)}</td>
      <td>
        <Delivery topic={topic} from={from} group={g} />
      </td>
      <td class="row-actions">
        <button
          type="button"
          class="secondary small"
          aria-label={`Settings of ${g.name}`}
          onClick={() =>
            onOpen({
              kind: "settings",
              group: g.name,
              effective: g.settings ? { from, settings: g.settings } : null,
            })
          }
        >
          Settings…
        </button>
        <button
          type="button"
          class="secondary small"
          aria-label={`Seek ${g.name}`}
          onClick={() => onOpen({ kind: "seek", group: g.name })}
        >
          Seek…
        </button>
        <button
          type="button"
          class="danger small"
          aria-label={`Delete the group ${g.name}`}
          onClick={() => onOpen({ kind: "delete-group", group: g.name })}
        >
          Delete…
        </button>
      </td>
    </tr>
  );
}

/** The busiest keys of one group with flow control. */
function GroupKeys({
  group,
  flow,
  keys,
}: {
  readonly group: string;
  readonly flow: FlowControlSettings;
  readonly keys: BusiestKeys | Error;
}) {
  const title = `Busiest keys of ${group}`;
  return (
    <section class="group-keys" aria-label={title}>
      <h3>
        {group} <span class="muted small">{describeFlow(flow)}</span>
      </h3>
      {keys instanceof Error ? (
        <ErrorText error={keys} />
      ) : keys.keys.length === 0 ? (
        <p class="muted">No key has a message in flight or waiting.</p>
      ) : (
        <div class="table-wrap">
          <table class="keys">
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Key ({flow.key})</th>
                <th scope="col" class="num">
                  In flight
                </th>
                <th scope="col" class="num">
                  Waiting
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.keys.map((k) => (
                <tr key={k.keyHash}>
                  <th scope="row" class="key">
                    {k.key === null ? (
                      <span class="muted" title={`Stored as the hash ${k.keyHash}`}>
                        (unread: hash {k.keyHash.slice(0, 12)}…)
                      </span>
                    ) : (
                      `${k.key}${k.keyTruncated ? "…" : ""}`
                    )}
                  </th>
                  <td class="num">{formatCount(k.inFlight)}</td>
                  <td class="num">{formatCount(k.waiting)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {keys instanceof Error ? null : <SampleNote keys={keys} />}
    </section>
  );
}

/** What the figures are counted from, when it is not everything. */
function SampleNote({ keys: k }: { readonly keys: BusiestKeys }) {
  const notes: string[] = [];
  if (!k.keyRecords.complete) {
    notes.push(`In flight is counted from the first ${formatCount(k.keyRecords.read)} keys only.`);
  }
  if (!k.waitingSample.complete) {
    notes.push(
      `Waiting is counted among the group's oldest ${formatCount(k.waitingSample.messages)} unacknowledged messages only.`,
    );
  }
  return notes.length ? <p class="muted small">{notes.join(" ")}</p> : null;
}

/** Polled or pushed; for a pushed group, how its last pushes went. */
function Delivery({
  topic,
  from,
  group: g,
}: {
  readonly topic: string;
  readonly from: string;
  readonly group: Group;
}) {
  const s = g.settings;
  const pattern = s && from !== topic ? <span class="muted small"> (from {from})</span> : null;
  const dead = s?.deadLetter ? (
    <div class="muted small">
      dead letters → {s.deadLetter.topic} after {s.deadLetter.maxDeliveries}
    </div>
  ) : null;
  const flow = s?.flowControl ? (
    <div class="muted small">flow control {describeFlow(s.flowControl)}</div>
  ) : null;
  if (!s?.push) {
    return (
      <>
        polled{pattern}
        {dead}
        {flow}
      </>
    );
  }
  const h = g.pushHealth;
  const success = h?.lastSuccessAt ? Date.parse(h.lastSuccessAt) : 0;
  const failure = h?.lastFailureAt ? Date.parse(h.lastFailureAt) : 0;
  let health;
  if (!success && !failure) health = <span class="badge">no pushes yet</span>;
  else if (failure > success) {
    health = (
      <span class="badge bad" title={h?.lastFailure ?? undefined}>
        failing {ageOf(h?.lastFailureAt)} ago{h?.lastFailure ? `: ${h.lastFailure}` : ""}
      </span>
    );
  } else health = <span class="badge good">ok {ageOf(h?.lastSuccessAt)} ago</span>;
  return (
    <>
      <span title={s.push.url}>push</span>
      {pattern} {health}
      <div class="muted small url" title={s.push.url}>
        {s.push.url}
      </div>
      {dead}
      {flow}
    </>
  );
}

function sum<T>(items: readonly T[], f: (t: T) => number): number {
  return items.reduce((a, x) => a + (f(x) || 0), 0);
}

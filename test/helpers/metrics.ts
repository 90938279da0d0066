// A gateway's Prometheus exposition (GET /metrics), read by tests: its sample lines, one series'
// value, or the values of every series whose name starts with a prefix.

/** The sample lines (name, labels, value) that start with `prefix`. */
export async function metricLines(url: string, prefix: string): Promise<string[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith(prefix));
}

/** The value of the series spelled exactly `series` (its name and any labels); NaN when absent. */
export async function metricValue(url: string, series: string): Promise<number> {
  const [line] = await metricLines(url, `${series} `);
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

/** The values of the series that start with `prefix`, by the rest of their name and labels. */
export async function metricsByPrefix(url: string, prefix: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of await metricLines(url, prefix)) {
    const at = line.lastIndexOf(" ");
    out.set(line.slice(prefix.length, at), Number(line.slice(at + 1)));
  }
  return out;
}

/**
 * The value of the series `series` once it has stopped moving: the same in every sample over
 * `quietMs` (a gauge that work under way is still filling, such as a download's read-ahead until
 * its reader's socket pushes back, changes until that work blocks).
 */
export async function settledMetricValue(
  url: string,
  series: string,
  { quietMs = 1000, timeoutMs = 15_000 } = {},
): Promise<number> {
  const start = Date.now();
  let last = await metricValue(url, series);
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(`${series} was still moving after ${timeoutMs} ms (last ${last})`);
    }
    await new Promise((r) => setTimeout(r, 100));
    const value = await metricValue(url, series);
    if (value !== last) [last, since] = [value, Date.now()];
  }
  return last;
}

// A gateway's Prometheus exposition, read by tests: the whole text, its sample lines, one
// series' value, or the values of every series whose name starts with a prefix. Each takes the
// exposition's URL, a TestGateway's (or GatewayProcess's) `metricsUrl`: GET /metrics is served
// on the metrics port, never on the API's.

/** The exposition text (200 expected). */
export async function scrape(metricsUrl: string): Promise<string> {
  const res = await fetch(metricsUrl);
  if (res.status !== 200) throw new Error(`GET ${metricsUrl}: ${res.status}`);
  return res.text();
}

/** The sample lines (name, labels, value) that start with `prefix`. */
export async function metricLines(metricsUrl: string, prefix: string): Promise<string[]> {
  return (await scrape(metricsUrl)).split("\n").filter((l) => l.startsWith(prefix));
}

/** The value of the series spelled exactly `series` (its name and any labels); NaN when absent. */
export async function metricValue(metricsUrl: string, series: string): Promise<number> {
  const [line] = await metricLines(metricsUrl, `${series} `);
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

/** The values of the series that start with `prefix`, by the rest of their name and labels. */
export async function metricsByPrefix(
  metricsUrl: string,
  prefix: string,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of await metricLines(metricsUrl, prefix)) {
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
  metricsUrl: string,
  series: string,
  { quietMs = 1000, timeoutMs = 15_000 } = {},
): Promise<number> {
  const start = Date.now();
  let last = await metricValue(metricsUrl, series);
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(`${series} was still moving after ${timeoutMs} ms (last ${last})`);
    }
    await new Promise((r) => setTimeout(r, 100));
    const value = await metricValue(metricsUrl, series);
    if (value !== last) [last, since] = [value, Date.now()];
  }
  return last;
}

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

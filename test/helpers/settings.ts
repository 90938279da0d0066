// HTTP helpers for the consumer settings resource, and a poll for what spreads between gateways.
export { eventually } from "./wait.js";

export function settingsApi(base: string, token: string, extra: Record<string, string> = {}) {
  const call = (method: string, path: string, body?: string) =>
    fetch(`${base}/api/v3/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...extra,
      },
      ...(body !== undefined ? { body } : {}),
    });
  const at = (topic: string, group: string) =>
    `topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}/settings`;
  return {
    /** `body` as given when a string, else JSON-encoded. */
    put: (topic: string, group: string, body: unknown) =>
      call("PUT", at(topic, group), typeof body === "string" ? body : JSON.stringify(body)),
    get: (topic: string, group: string) => call("GET", at(topic, group)),
    delete: (topic: string, group: string) => call("DELETE", at(topic, group)),
    list: async () => {
      const res = await call("GET", "settings");
      if (res.status !== 200) throw new Error(`list answered ${res.status}`);
      return ((await res.json()) as { settings: Record<string, unknown>[] }).settings;
    },
  };
}

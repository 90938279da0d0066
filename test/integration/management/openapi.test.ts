// The OpenAPI document as a gateway serves it: at GET /openapi.json without a token, the same as
// docs/openapi.json, and listing every route the gateway has with its methods (HEAD aside: every
// GET answers it, as the document says; the web console's files aside: a page, not the API).
// Validity and the API reference (docs/api.md): test/unit/openapi.test.ts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";

const fx = useGateways(1);

/** "METHOD /path" of every route, from Fastify's route tree (one route a line, nested by 4). */
function registeredRoutes(tree: string): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of tree.split("\n")) {
    const m = /^(.*?)(?:├── |└── )(\S+) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join("").replace(/:(\w+)/g, "{$1}");
    for (const method of m[3]!.split(", ")) {
      if (method !== "HEAD") routes.push(`${method} ${path}`);
    }
  }
  return routes;
}

describe("GET /openapi.json", () => {
  it("serves docs/openapi.json without a token", async () => {
    const res = await fetch(`${fx.gateways[0]!.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const committed = readFileSync(new URL("../../../docs/openapi.json", import.meta.url), "utf8");
    expect(await res.json()).toEqual(JSON.parse(committed));
  });

  it("lists every route of the gateway with its methods, and no other", async () => {
    const tree = fx.gateways[0]!.gateway.app.printRoutes({ commonPrefix: false });
    const all = registeredRoutes(tree);
    // The console is on in these tests (development): its routes are there and left out.
    expect(all).toContain("GET /console");
    const routes = all.filter((r) => !/^GET \/console([/*]|$)/.test(r));
    expect(routes.length).toBeGreaterThan(20);
    const res = await fetch(`${fx.gateways[0]!.url}/openapi.json`);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((key) => key !== "servers")
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect([...routes].sort()).toEqual([...documented].sort());
  });

  it("answers under /queues-proxy exactly the paths that list it as a server", async () => {
    const base = fx.gateways[0]!.url;
    const res = await fetch(`${base}/openapi.json`);
    const doc = (await res.json()) as {
      paths: Record<string, { servers?: { url: string }[] } & Record<string, unknown>>;
    };
    let proxied = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      const listed = item.servers?.some((s) => s.url === "/queues-proxy") === true;
      if (listed) proxied++;
      const url = `${base}/queues-proxy${path.replace(/\{\w+\}/g, "x")}`;
      for (const method of Object.keys(item).filter((key) => key !== "servers")) {
        // No token: a route that is there answers 401 (the API) or 200 (the push keys); one that
        // is not, 404 route_not_found.
        const answer = await fetch(url, { method: method.toUpperCase() });
        const body = await answer.text();
        const where = `${method.toUpperCase()} ${path}: ${answer.status} ${body.slice(0, 80)}`;
        if (listed) expect(body, where).not.toContain("route_not_found");
        else expect(answer.status, where).toBe(404);
      }
    }
    expect(proxied).toBeGreaterThan(10);
  });

  it("leaves the API's authentication as it was", async () => {
    const res = await fetch(`${fx.gateways[0]!.url}/api/v3/topics`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("missing_token");
  });
});

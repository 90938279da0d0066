// Caps per tenant (team, project, environment), all its deployments together: one token that
// spreads over invented Vqs-Deployment-Id values is refused at its tenant's topic cap and at the
// bound on live deployments, and at the tenant's bytes, with nothing stored by the refused request, while its existing
// deployments and other tenants are served as before.
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { settingsApi } from "../../helpers/settings.js";

const TOPICS = 4;
const DEPLOYMENTS = 3;
const TENANT_BYTES = 200_000;

const fx = useGateways(1, {
  env: {
    VQS_MAX_TOPICS_PER_NAMESPACE: String(TOPICS),
    VQS_MAX_DEPLOYMENTS_PER_TENANT: String(DEPLOYMENTS),
    VQS_TENANT_MAX_BYTES: String(TENANT_BYTES),
  },
});

const tokenOf = (project: string) => fx.issuer.token({ project_id: project });

/** The topic names one deployment's listing shows. */
async function topicsOf(token: string, deployment: string): Promise<string[]> {
  const res = await fetch(`${fx.gateways[0]!.url}/api/v3/topics?limit=1000`, {
    headers: { authorization: `Bearer ${token}`, "vqs-deployment-id": deployment },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { topics: { name: string }[] };
  return body.topics.map((t) => t.name);
}

describe("caps per tenant, all its deployments together", () => {
  it("refuses a topic past the tenant's topic cap, whatever deployment it is made in", async () => {
    const token = await tokenOf("prj_tenant_topics");
    const url = fx.gateways[0]!.url;
    const deployment = (d: string) => api(url, token, { "vqs-deployment-id": d });
    // Two deployments, two topics each: the tenant's cap of four, though each deployment has
    // room for two more under its own.
    for (const d of ["dpl_a", "dpl_b"]) {
      for (const t of ["one", "two"]) {
        expect((await deployment(d).publish(t, "x")).status).toBe(201);
      }
    }
    for (const d of ["dpl_a", "dpl_c"]) {
      const refused = await deployment(d).publish(uniqueName(), "x");
      expect(refused.status).toBe(403);
      const body = (await refused.json()) as { error: { code: string }; scope?: string };
      expect(body.error.code).toBe("topic_limit_reached");
      expect(body.scope).toBe("tenant");
    }
    // Nothing of the refused publishes is stored; the existing topics take publishes.
    expect((await topicsOf(token, "dpl_a")).sort()).toEqual(["one", "two"]);
    expect(await topicsOf(token, "dpl_c")).toEqual([]);
    expect((await deployment("dpl_b").publish("one", "still served")).status).toBe(201);
    // Another tenant has its own cap.
    const other = api(url, await tokenOf("prj_tenant_topics_other"), {
      "vqs-deployment-id": "dpl_a",
    });
    expect((await other.publish(uniqueName(), "x")).status).toBe(201);
  });

  it("bounds the live deployments of a tenant: a new one is refused 429 with Retry-After", async () => {
    const token = await tokenOf("prj_tenant_deployments");
    const url = fx.gateways[0]!.url;
    const deployment = (d: string) => api(url, token, { "vqs-deployment-id": d });
    for (let i = 0; i < DEPLOYMENTS; i++) {
      expect((await deployment(`dpl_${i}`).publish("t", "x")).status).toBe(201);
    }
    const refused = await deployment("dpl_invented").publish("t", "x");
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("deployment_limit_reached");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await topicsOf(token, "dpl_invented")).toEqual([]);
    // A settings document would make the deployment live too: refused the same way.
    const settings = settingsApi(url, token, { "vqs-deployment-id": "dpl_invented_2" });
    const put = await settings.put("t", "g", { retry: { afterSeconds: 30 } });
    expect(put.status).toBe(429);
    expect(await errorCode(put)).toBe("deployment_limit_reached");
    // The live deployments are served: a new topic in one of them is made.
    expect((await deployment("dpl_0").publish(uniqueName(), "x")).status).toBe(201);
    // A deploymentless token of the same tenant is one more deployment.
    expect((await api(url, token).publish("t", "x")).status).toBe(429);
  });

  it("refuses a publish past the tenant's bytes, its deployments' topics together", async () => {
    const token = await tokenOf("prj_tenant_bytes");
    const url = fx.gateways[0]!.url;
    const body = "b".repeat(30_000);
    let stored = 0;
    let refused: Response | null = null;
    // Each deployment alone is far under the namespace's default (10 GiB).
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await api(url, token, { "vqs-deployment-id": `dpl_${i % 2}` }).publish("t", body);
      if (res.status === 201) stored++;
      else refused = res;
    }
    expect(refused?.status).toBe(429);
    expect(await errorCode(refused!)).toBe("storage_quota_exceeded");
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(stored * body.length).toBeLessThanOrEqual(TENANT_BYTES);
    expect(stored).toBeGreaterThanOrEqual(3);
  });
});

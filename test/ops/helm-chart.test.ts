// The chart (helm/vqs) run through the real helm (scripts/ensure-helm.mjs puts the official helm
// 4.1.4 into .cache/helm/): `helm lint` and `helm template` with several value sets, each rendered
// object validated against the Kubernetes API schemas of a current release (kubernetes-models,
// generated from the Kubernetes OpenAPI; the Prometheus Operator's CRDs from
// @kubernetes-models/prometheus-operator). The PrometheusRule and the dashboard ConfigMap carry the
// very files deploy/ links to; values the templates cannot render are refused by values.schema.json
// before anything renders, with the bounds the gateway itself enforces (src/config.ts), and the
// rendered ConfigMap is loaded by the gateway's own loadConfig.
// The NATS side: helm/nats-values.yaml, deploy/nats/ and deploy/regions.example.env set what the
// gateway needs (the configs checked by nats-server -t). Without helm these fail, never skip.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import {
  PrometheusRule,
  ServiceMonitor,
} from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { ConfigError, loadConfig, RENAMED, settingWarnings } from "../../src/config.js";
import { HEADER_RESERVE } from "../../src/nats/jetstream-adapter.js";
import { chart, helmBinary, regionValues, root } from "../helpers/chart.js";
import { currentNatsServerBinary } from "../helpers/processes/nats.js";

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/** The schema of every kind the chart may render; any other kind fails the test. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Pod": Pod,
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

const work = mkdtempSync(join(tmpdir(), "vqs-chart-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let files = 0;

/** Runs helm with the values in a file (as an operator would pass them with -f). */
function helm(command: "lint" | "template", values: object) {
  const file = join(work, `values-${++files}.yaml`);
  writeFileSync(file, stringify(values));
  const args =
    command === "lint"
      ? ["lint", "--strict", chart, "-f", file]
      : ["template", "vqs", chart, "--namespace", "queues", "-f", file];
  return spawnSync(helmBinary(), args, { encoding: "utf8" });
}

/** Lints and renders; every object is validated against its Kubernetes schema. */
function render(values: object): K8sObject[] {
  const lint = helm("lint", values);
  expect(lint.status, lint.stdout + lint.stderr).toBe(0);
  const r = helm("template", values);
  expect(r.status, r.stderr).toBe(0);
  const objects = parseAllDocuments(r.stdout)
    .map((doc) => {
      expect(doc.errors).toEqual([]);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
  for (const o of objects) {
    const Model = MODELS[`${o.apiVersion}/${o.kind}`];
    expect(Model, `no schema for ${o.apiVersion} ${o.kind}`).toBeDefined();
    expect(() => new Model!(o as never).validate(), `${o.kind} ${o.metadata.name}`).not.toThrow();
  }
  return objects;
}

const kinds = (objects: K8sObject[]) => objects.map((o) => o.kind).sort();
const find = (objects: K8sObject[], kind: string) => objects.find((o) => o.kind === kind)!;
const merged = (extra: object) => ({ ...regionValues, ...extra });

/** The region's values with these under config.largeBodies. */
const withLargeBodies = (largeBodies: object) =>
  merged({ config: { ...regionValues.config, largeBodies } });

/** The environment a gateway pod gets: the ConfigMap (envFrom) and the receipt secret. */
function podEnv(objects: K8sObject[]): Record<string, string> {
  const configMap = find(objects, "ConfigMap") as K8sObject & { data: Record<string, string> };
  return { ...configMap.data, VQS_RECEIPT_SECRET: regionValues.secret.receiptSecret };
}

/** config.largeBodies.<key> and the variable it renders (every one but natsMaxFileStoreBytes). */
const LARGE_BODY_VALUES: Record<string, string> = {
  storeBytes: "VQS_LARGE_BODY_STORE_BYTES",
  maxUploads: "VQS_MAX_LARGE_UPLOADS",
  maxDownloads: "VQS_MAX_LARGE_DOWNLOADS",
};

/** The range the gateway accepts for an integer variable, from loadConfig's own refusal. */
function gatewayRange(name: string): { min: number; max: number } {
  try {
    loadConfig({ [name]: "not-a-number" });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const m = new RegExp(`${name} must be an integer from (\\d+) to (\\d+)`).exec(err.message);
    if (m) return { min: Number(m[1]), max: Number(m[2]) };
  }
  throw new Error(`loadConfig does not read ${name} as an integer`);
}

/** The variables loadConfig reads (from an empty environment). */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  loadConfig(
    new Proxy<Record<string, string | undefined>>(
      {},
      {
        get(_, name) {
          if (typeof name === "string") names.add(name);
          return undefined;
        },
      },
    ),
  );
  return names;
}

describe("the chart, through helm and the Kubernetes schemas", () => {
  it("renders a region with the required values only", () => {
    const objects = render(regionValues);
    expect(kinds(objects)).toEqual([
      "ConfigMap",
      "Deployment",
      "Pod",
      "PodDisruptionBudget",
      "Secret",
      "Service",
      "ServiceAccount",
    ]);
    const deployment = find(objects, "Deployment") as { spec: { replicas?: number } } & K8sObject;
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.metadata.namespace).toBe("queues");
  });

  it("a default install takes 100 MB bodies: the gateway loads the rendered ConfigMap", () => {
    const env = podEnv(render(regionValues));
    expect(env).toMatchObject({
      VQS_MAX_MESSAGE_BYTES: "100000000",
      VQS_LARGE_BODY_STORE_BYTES: "10737418240",
    });
    // The other large-body values are null: the gateway's defaults apply.
    const rendered = Object.values(LARGE_BODY_VALUES).filter((name) => name in env);
    expect(rendered).toEqual(["VQS_LARGE_BODY_STORE_BYTES"]);
    const config = loadConfig(env);
    expect(config.production).toBe(true);
    expect(config.maxMessageBytes).toBe(100_000_000);
    expect(config.maxMessageBytes).toBe(loadConfig({}).maxMessageBytes);
    expect(config.inlineBodyBytes).toBeLessThan(config.maxMessageBytes);
    expect(config.largeBodyStoreBytes).toBe(10 * 1024 ** 3);
  });

  it("exposes every large-body setting of the gateway under config.largeBodies", () => {
    const values = parse(readFileSync(join(chart, "values.yaml"), "utf8")) as {
      config: { largeBodies: Record<string, unknown> };
    };
    expect(Object.keys(values.config.largeBodies).sort()).toEqual(
      [...Object.keys(LARGE_BODY_VALUES), "natsMaxFileStoreBytes"].sort(),
    );
    const largeBodySettings = [...variablesRead()].filter((name) =>
      /^VQS_(LARGE_|MAX_LARGE_|INLINE_BODY_|MIN_UPLOAD_|MIN_DOWNLOAD_)/.test(name),
    );
    // The old names (RENAMED) are read for one release; the chart renders maxStreams into one.
    const old = new Set(Object.values(RENAMED));
    expect(largeBodySettings.filter((name) => !old.has(name)).sort()).toEqual(
      Object.values(LARGE_BODY_VALUES).sort(),
    );
  });

  it("renders each large-body value into its variable, at both bounds the gateway accepts", () => {
    for (const bound of ["min", "max"] as const) {
      const largeBodies = Object.fromEntries(
        Object.entries(LARGE_BODY_VALUES).map(([key, name]) => [key, gatewayRange(name)[bound]]),
      );
      // The largest store is larger than any NATS volume: the check is off (null) for it.
      const env = podEnv(render(withLargeBodies({ ...largeBodies, natsMaxFileStoreBytes: null })));
      for (const [key, name] of Object.entries(LARGE_BODY_VALUES)) {
        expect(env[name], `${key} (${bound})`).toBe(String(largeBodies[key]));
      }
      const config = loadConfig(env);
      expect(config.largeBodyStoreBytes).toBe(largeBodies.storeBytes);
      expect(config.maxLargeStreams).toBe(largeBodies.maxUploads);
      expect(config.maxLargeDownloads).toBe(largeBodies.maxDownloads);
    }
    // 0 (no limit) is a value, not "unset".
    const env = podEnv(render(withLargeBodies({ storeBytes: 0 })));
    expect(env).toMatchObject({ VQS_LARGE_BODY_STORE_BYTES: "0" });
    // maxUploads' old key still renders, into the variable's old name, which the gateway reads.
    const old = podEnv(render(withLargeBodies({ maxStreams: 3 })));
    expect(old.VQS_MAX_LARGE_STREAMS).toBe("3");
    expect(loadConfig(old).maxLargeStreams).toBe(3);
  });

  it("still takes a retired value, which the gateway ignores with a warning", () => {
    const env = podEnv(
      render(merged({ config: { ...regionValues.config, operatorClaim: "vqs_operator" } })),
    );
    expect(env.VQS_OPERATOR_CLAIM).toBe("vqs_operator");
    expect(loadConfig(env)).toEqual(loadConfig(podEnv(render(regionValues))));
    expect(settingWarnings(env).join("\n")).toMatch(/^VQS_OPERATOR_CLAIM is no longer read/);
  });

  it("renders tenantOverrides into VQS_TENANT_OVERRIDES, and the old per-team keys with a warning", () => {
    const overrides =
      "team_a:rate=500,team_a:bytes=1073741824,team_a/prj_1:push=http://a1.svc:3000";
    const env = podEnv(
      render(merged({ config: { ...regionValues.config, tenantOverrides: overrides } })),
    );
    expect(env.VQS_TENANT_OVERRIDES).toBe(overrides);
    const c = loadConfig(env);
    expect(c.rateLimitTeams.get("team_a")).toBe(500);
    expect(c.namespaceMaxBytesTeams.get("team_a")).toBe(1073741824);
    expect(c.pushAllowedUrlsTenants.get("team_a/prj_1")?.map((p) => p.text)).toEqual([
      "http://a1.svc:3000",
    ]);
    const old = podEnv(
      render(merged({ config: { ...regionValues.config, rateLimitTeams: "team_a=500" } })),
    );
    expect(loadConfig(old).rateLimitTeams.get("team_a")).toBe(500);
    expect(settingWarnings(old).join("\n")).toMatch(
      /VQS_RATE_LIMIT_TEAMS is folded into VQS_TENANT_OVERRIDES/,
    );
    const bad = helm(
      "template",
      merged({ config: { ...regionValues.config, tenantOverrides: "team_a=500" } }),
    );
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("tenantOverrides");
  });

  it("refuses large-body values the gateway would refuse, and a store the NATS volume cannot hold", () => {
    for (const [key, name] of Object.entries(LARGE_BODY_VALUES)) {
      const { min, max } = gatewayRange(name);
      const outside = [max + 1, ...(min > 0 ? [min - 1] : []), "64"];
      for (const value of outside) {
        const r = helm("template", withLargeBodies({ [key]: value, natsMaxFileStoreBytes: null }));
        expect(r.status, `${key}: ${value}`).not.toBe(0);
        expect(r.stderr, `${key}: ${value}`).toContain(`/config/largeBodies/${key}`);
      }
    }
    const refused: [object, RegExp][] = [
      [withLargeBodies({ surprise: 1 }), /surprise/],
      // The store reserves its bytes on every replica: at or above the volume it is never made.
      [
        withLargeBodies({ storeBytes: 50 * 1024 ** 3 }),
        /storeBytes.*less than.*natsMaxFileStoreBytes/,
      ],
      [
        withLargeBodies({ storeBytes: 2 * 1024 ** 3, natsMaxFileStoreBytes: 1024 ** 3 }),
        /storeBytes \(2147483648\) must be less than/,
      ],
    ];
    for (const [values, why] of refused) {
      const r = helm("template", values);
      expect(r.status, JSON.stringify(values)).not.toBe(0);
      expect(r.stderr, JSON.stringify(values)).toMatch(why);
    }
    // Just below the volume, or no limit at all, renders.
    render(withLargeBodies({ storeBytes: 50 * 1024 ** 3 - 1 }));
    render(withLargeBodies({ storeBytes: 0, natsMaxFileStoreBytes: 1024 ** 3 }));
  });

  it("refuses values of settings the gateway fixes (not read from the environment)", () => {
    for (const config of [
      { heapGrowingPercent: 300 },
      { requestLogs: true },
      { consumerAckWaitSeconds: 60 },
      { shutdownGraceSeconds: 25 },
    ]) {
      const r = helm("template", merged({ config: { ...regionValues.config, ...config } }));
      expect(r.status, JSON.stringify(config)).not.toBe(0);
      expect(r.stderr, JSON.stringify(config)).toContain(Object.keys(config)[0]);
    }
    const r = helm("template", withLargeBodies({ readWindow: 4 }));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("readWindow");
  });

  it("renders the HorizontalPodAutoscaler, and leaves replicas to it", () => {
    const objects = render(merged({ autoscaling: { enabled: true, minReplicas: 4 } }));
    const hpa = find(objects, "HorizontalPodAutoscaler") as K8sObject & {
      spec: { minReplicas: number; scaleTargetRef: { kind: string; name: string } };
    };
    expect(hpa.spec.minReplicas).toBe(4);
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: "Deployment", name: "vqs" });
    expect(find(objects, "Deployment")).not.toHaveProperty("spec.replicas");
  });

  it("renders the ServiceMonitor, the PrometheusRule from alerts.yml and the dashboard ConfigMap", () => {
    const objects = render(
      merged({
        serviceMonitor: { enabled: true, labels: { release: "kube-prometheus-stack" } },
        prometheusRule: {
          enabled: true,
          labels: { release: "kube-prometheus-stack" },
          runbookBaseUrl: "https://git.example.com/platform/vqs/blob/main/",
          ruleLabels: { team: "platform" },
        },
        grafanaDashboard: { enabled: true, namespace: "monitoring" },
      }),
    );
    expect(find(objects, "ServiceMonitor").metadata.labels).toMatchObject({
      release: "kube-prometheus-stack",
    });

    // The PrometheusRule is alerts.yml itself, with the runbook base and the extra label added.
    const rule = find(objects, "PrometheusRule") as K8sObject & { spec: { groups: unknown } };
    expect(rule.metadata.labels).toMatchObject({ release: "kube-prometheus-stack" });
    const source = parse(
      readFileSync(join(root, "deploy", "prometheus", "alerts.yml"), "utf8"),
    ) as {
      groups: {
        rules: { labels: Record<string, string>; annotations: Record<string, string> }[];
      }[];
    };
    for (const r of source.groups.flatMap((g) => g.rules)) {
      r.labels = { ...r.labels, team: "platform" };
      r.annotations.runbook_url = `https://git.example.com/platform/vqs/blob/main/${r.annotations.runbook_url}`;
    }
    expect(rule.spec.groups).toEqual(source.groups);

    // The dashboard ConfigMap: the sidecar's label, in Grafana's namespace, the file byte for byte.
    const dashboard = objects.find((o) => o.metadata.name === "vqs-dashboard") as K8sObject & {
      data: Record<string, string>;
    };
    expect(dashboard.metadata).toMatchObject({
      namespace: "monitoring",
      labels: { grafana_dashboard: "1" },
    });
    const json = readFileSync(join(root, "deploy", "grafana", "vqs-dashboard.json"), "utf8");
    expect(dashboard.data["vqs-dashboard.json"]).toBe(json.trimEnd());
  });

  it("serves metrics on a port of their own: scraped there, never on the API Service", () => {
    interface Port {
      name: string;
      port?: number;
      containerPort?: number;
      targetPort?: string;
    }
    interface Probe {
      httpGet: { path: string; port: string };
    }
    const objects = render(merged({ serviceMonitor: { enabled: true } }));
    const env = podEnv(objects);
    const metricsPort = Number(env.VQS_METRICS_PORT);
    expect(metricsPort).toBe(9464);
    expect(metricsPort).not.toBe(Number(env.PORT));
    expect(loadConfig(env)).toMatchObject({ metricsPort, port: Number(env.PORT) });

    const deployment = find(objects, "Deployment") as K8sObject & {
      spec: {
        template: {
          metadata: { annotations: Record<string, string> };
          spec: {
            containers: {
              ports: Port[];
              livenessProbe: Probe;
              readinessProbe: Probe;
              startupProbe: Probe;
            }[];
          };
        };
      };
    };
    const pod = deployment.spec.template;
    const gateway = pod.spec.containers[0]!;
    expect(gateway.ports).toEqual([
      { name: "http", containerPort: Number(env.PORT), protocol: "TCP" },
      { name: "metrics", containerPort: metricsPort, protocol: "TCP" },
    ]);
    expect(pod.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": String(metricsPort),
      "prometheus.io/path": "/metrics",
    });
    // The probes stay on the API port, where the gateway serves them.
    expect(gateway.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(gateway.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(gateway.startupProbe.httpGet).toEqual({ path: "/healthz", port: "http" });

    // The API Service has the http port alone; the ServiceMonitor selects the metrics Service.
    const services = objects.filter((o) => o.kind === "Service") as (K8sObject & {
      spec: { ports: Port[] };
    })[];
    const api = services.find((o) => o.metadata.name === "vqs")!;
    expect(api.spec.ports.map((p) => p.name)).toEqual(["http"]);
    const monitor = find(objects, "ServiceMonitor") as K8sObject & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; path: string }[];
      };
    };
    expect(monitor.spec.endpoints).toMatchObject([{ port: "metrics", path: "/metrics" }]);
    const selected = services.filter((o) =>
      Object.entries(monitor.spec.selector.matchLabels).every(
        ([k, v]) => o.metadata.labels?.[k] === v,
      ),
    );
    expect(selected.map((o) => o.metadata.name)).toEqual(["vqs-metrics"]);
    expect(selected[0]!.spec.ports).toEqual([
      { name: "metrics", port: metricsPort, targetPort: "metrics", protocol: "TCP" },
    ]);

    // Another port is rendered everywhere alike.
    const moved = render(
      merged({
        config: { ...regionValues.config, metricsPort: 9100 },
        serviceMonitor: { enabled: true },
      }),
    );
    expect(podEnv(moved).VQS_METRICS_PORT).toBe("9100");
    expect(JSON.stringify(find(moved, "Deployment"))).toContain(
      '{"name":"metrics","containerPort":9100,"protocol":"TCP"}',
    );
  });

  it("renders with an existing Secret and NATS credentials, and creates no Secret", () => {
    const objects = render({
      config: regionValues.config,
      secret: { existingSecret: "vqs-receipt", existingSecretKey: "key" },
      nats: { credsSecret: "vqs-nats" },
    });
    expect(kinds(objects)).not.toContain("Secret");
    const text = JSON.stringify(find(objects, "Deployment"));
    expect(text).toContain('"secretKeyRef":{"name":"vqs-receipt","key":"key"}');
    expect(text).toContain('"secretName":"vqs-nats"');
  });

  it("refuses values the templates cannot render, naming the value", () => {
    const refused: [object, RegExp][] = [
      [{ config: regionValues.config }, /receipt|secret/i],
      [{ ...regionValues, config: { ...regionValues.config, natsUrl: "" } }, /natsUrl/],
      [merged({ secret: { receiptSecret: "short" } }), /receiptSecret/],
      [merged({ replicaCount: "three" }), /replicaCount/],
      [merged({ surprise: true }), /surprise/],
      [merged({ prometheusRule: { enabled: true, runbookBaseUrl: "docs" } }), /runbookBaseUrl/],
      [merged({ grafanaDashboard: { enabled: true, labels: { grafana_dashboard: 1 } } }), /labels/],
      [merged({ autoscaling: { enabled: true, minReplicas: 0 } }), /minReplicas/],
      [merged({ autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } }), /minReplicas/],
      [merged({ fullnameOverride: "Queue_Gateway" }), /fullnameOverride/],
      [merged({ prometheusRule: { enabled: true, namespace: "Mon itoring" } }), /namespace/],
      [merged({ serviceMonitor: { enabled: true, interval: "often" } }), /interval/],
      [
        merged({ secret: { existingSecret: "vqs-receipt", existingSecretKey: "a/b" } }),
        /SecretKey/,
      ],
      [merged({ serviceAccount: { name: "Gateway_SA" } }), /serviceAccount/],
      [merged({ config: { ...regionValues.config, maxMessageBytes: 1e9 + 1 } }), /maxMessageBytes/],
      [merged({ config: { ...regionValues.config, maxMessageBytes: 0 } }), /maxMessageBytes/],
      [merged({ config: { ...regionValues.config, metricsPort: 8080 } }), /metricsPort/],
      [merged({ config: { ...regionValues.config, metricsPort: 0 } }), /metricsPort/],
    ];
    for (const [values, why] of refused) {
      const r = helm("template", values);
      expect(r.status, JSON.stringify(values)).not.toBe(0);
      expect(r.stderr, JSON.stringify(values)).toMatch(why);
    }
  });
});

describe("the NATS side (helm/nats-values.yaml for the official chart; deploy/nats/ by hand)", () => {
  it("sets what the gateway needs: 3 JetStream servers, fsync always, max_payload, a volume", () => {
    const v = parse(readFileSync(join(root, "helm", "nats-values.yaml"), "utf8")) as {
      config: {
        cluster: { enabled: boolean; replicas: number };
        jetstream: {
          enabled: boolean;
          fileStore: {
            enabled: boolean;
            pvc: { enabled: boolean; size: string };
            maxSize: string | null;
          };
          merge: { sync_interval: string };
        };
        merge: { max_payload: string };
      };
    };
    expect(v.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(v.config.jetstream).toMatchObject({
      enabled: true,
      fileStore: { enabled: true, pvc: { enabled: true } },
      merge: { sync_interval: "always" },
    });
    expect(v.config.merge.max_payload).toMatch(/^<< \d+MB >>$/);
    const values = parse(readFileSync(join(chart, "values.yaml"), "utf8")) as {
      config: {
        streamReplicas: number;
        maxMessageBytes: number;
        largeBodies: {
          inlineBodyBytes: number | null;
          storeBytes: number;
          natsMaxFileStoreBytes: number;
        };
      };
    };
    const { largeBodies } = values.config;
    // R3 streams on 3 servers.
    expect(values.config.streamReplicas).toBeLessThanOrEqual(v.config.cluster.replicas);
    // Only the inline limit is bounded by max_payload (a body and its headers, up to
    // HEADER_RESERVE, in one message); bodies above it, up to maxMessageBytes, go to the
    // large-body store.
    const inline = largeBodies.inlineBodyBytes ?? loadConfig({}).inlineBodyBytes;
    expect(inline).toBeLessThanOrEqual(natsBytes(v.config.merge.max_payload) - HEADER_RESERVE);
    expect(values.config.maxMessageBytes).toBe(100_000_000);
    expect(values.config.maxMessageBytes).toBeGreaterThan(inline);
    // The store's limit is reserved on every server: the chart's idea of the servers' storage is
    // the volume nats-values.yaml gives them (max_file_store defaults to it), and the store takes
    // at most a quarter of it.
    expect(largeBodies.natsMaxFileStoreBytes).toBe(
      kubernetesBytes(v.config.jetstream.fileStore.pvc.size),
    );
    expect(v.config.jetstream.fileStore.maxSize).toBeNull();
    expect(largeBodies.storeBytes).toBeGreaterThan(0);
    expect(largeBodies.storeBytes).toBeLessThanOrEqual(largeBodies.natsMaxFileStoreBytes / 4);
  });

  it("deploy/nats/ configs pass nats-server -t and set the same", () => {
    for (const n of [1, 2, 3]) {
      const file = join(root, "deploy", "nats", `cluster-node-${n}.conf`);
      const r = spawnSync(currentNatsServerBinary(), ["-t", "-c", file], { encoding: "utf8" });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const text = readFileSync(file, "utf8");
      expect(text).toMatch(/^max_payload: 2MB$/m);
      expect(text).toMatch(/^\s+sync_interval: always$/m);
      expect(text.match(/nats-route:\/\/nats-\d:6222/g)).toHaveLength(3);
    }
  });

  it("deploy/regions.example.env takes 100 MB bodies with a store deploy/nats/ has room for", () => {
    const env = Object.fromEntries(
      readFileSync(join(root, "deploy", "regions.example.env"), "utf8")
        .split("\n")
        .map((line) => /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
        .filter((m) => m !== null)
        .map((m) => [m[1]!, m[2]!]),
    );
    const config = loadConfig({ ...env, VQS_RECEIPT_SECRET: regionValues.secret.receiptSecret });
    expect(config.maxMessageBytes).toBe(100_000_000);
    const text = readFileSync(join(root, "deploy", "nats", "cluster-node-1.conf"), "utf8");
    const maxPayload = natsBytes(/^max_payload: (\S+)$/m.exec(text)![1]!);
    const maxFileStore = natsBytes(/^\s+max_file_store: (\S+)$/m.exec(text)![1]!);
    expect(config.inlineBodyBytes).toBeLessThanOrEqual(maxPayload - HEADER_RESERVE);
    expect(config.largeBodyStoreBytes).toBeGreaterThan(0);
    expect(config.largeBodyStoreBytes).toBeLessThanOrEqual(maxFileStore / 4);
  });
});

/** A nats-server size ("2MB", "<< 10GB >>"): KB, MB, GB and TB count in powers of 1024. */
function natsBytes(size: string): number {
  const m = /^(?:<< )?(\d+)(KB|MB|GB|TB)(?: >>)?$/.exec(size);
  if (!m) throw new Error(`not a nats-server size: ${size}`);
  return Number(m[1]) * 1024 ** (["KB", "MB", "GB", "TB"].indexOf(m[2]!) + 1);
}

/** A Kubernetes quantity in binary units ("50Gi"). */
function kubernetesBytes(size: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti)$/.exec(size);
  if (!m) throw new Error(`not a binary Kubernetes quantity: ${size}`);
  return Number(m[1]) * 1024 ** (["Ki", "Mi", "Gi", "Ti"].indexOf(m[2]!) + 1);
}

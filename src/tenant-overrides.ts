// VQS_TENANT_OVERRIDES: one variable for what an operator sets per tenant, instead of one
// variable per setting. Comma-separated entries `tenant:setting=value`:
//   team_big:rate=500                       requests per second (VQS_RATE_LIMIT_PER_SECOND_PER_TENANT)
//   team_big:bytes=53687091200              bytes stored (VQS_NAMESPACE_MAX_BYTES and VQS_TENANT_MAX_BYTES)
//   team_a/prj_1:push=http://a1.svc:3000    a push URL prefix more (VQS_PUSH_ALLOWED_URLS); repeatable
// `rate` and `bytes` take a team; `push` a team or a team and project. The variables they replace
// (VQS_RATE_LIMIT_TEAMS, VQS_NAMESPACE_MAX_BYTES_TEAMS, VQS_PUSH_ALLOWED_URLS_TEAMS: `tenant=value`)
// are still read for one release, with a warning, their entries before the new variable's.
import { parsePushUrlPrefix, type PushUrlPrefix } from "./queue/settings/push-destinations.js";

export interface TenantOverrides {
  /** Requests per second, per team. */
  readonly rate: ReadonlyMap<string, number>;
  /** Bytes a namespace and the tenant may store, per team. */
  readonly bytes: ReadonlyMap<string, number>;
  /** More push URL prefixes, per team or `team/project`. */
  readonly push: ReadonlyMap<string, readonly PushUrlPrefix[]>;
}

type Setting = "rate" | "bytes" | "push";

/** The folded variables, the setting each one's entries are, and the largest number's digits. */
export const FOLDED: Readonly<Record<string, Setting>> = {
  VQS_RATE_LIMIT_TEAMS: "rate",
  VQS_NAMESPACE_MAX_BYTES_TEAMS: "bytes",
  VQS_PUSH_ALLOWED_URLS_TEAMS: "push",
};

const DIGITS: Readonly<Record<Exclude<Setting, "push">, number>> = { rate: 7, bytes: 16 };
const TEAM = /^[^=:/,\s]+$/;
const TENANT = /^[^=:/,\s]+(?:\/[^=:/,\s]+)?$/;

/** Reads the overrides from `env`; each bad entry adds a problem naming its variable. */
export function tenantOverrides(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): TenantOverrides {
  const rate = new Map<string, number>();
  const bytes = new Map<string, number>();
  const push = new Map<string, PushUrlPrefix[]>();
  const put = (name: string, tenant: string, setting: Setting, value: string): void => {
    if (setting === "push") {
      if (!TENANT.test(tenant))
        return void problems.push(`${name}: "${tenant}" is not team_id or team_id/project_id`);
      try {
        push.set(tenant, [...(push.get(tenant) ?? []), parsePushUrlPrefix(value)]);
      } catch (err) {
        problems.push(`${name} entry ${(err as Error).message}`);
      }
      return;
    }
    if (!TEAM.test(tenant))
      return void problems.push(`${name}: ${setting} takes a team_id (got "${tenant}")`);
    if (!new RegExp(`^\\d{1,${DIGITS[setting]}}$`).test(value)) {
      return void problems.push(
        `${name}: ${setting} must be a whole number of up to ${DIGITS[setting]} digits (got "${value}")`,
      );
    }
    (setting === "rate" ? rate : bytes).set(tenant, Number(value));
  };
  for (const [name, setting] of Object.entries(FOLDED)) {
    for (const entry of entries(env[name])) {
      const m = /^([^=\s]+)=(.+)$/.exec(entry);
      if (!m) problems.push(`${name} entries look like team_id=value (got "${entry}")`);
      else put(name, m[1]!, setting, m[2]!);
    }
  }
  for (const entry of entries(env.VQS_TENANT_OVERRIDES)) {
    const m = /^([^:=\s]+):(rate|bytes|push)=(.+)$/.exec(entry);
    if (!m) {
      problems.push(
        `VQS_TENANT_OVERRIDES entries look like team_id:rate=500, team_id:bytes=1073741824 or team_id/project_id:push=https://hooks.example.com (got "${entry}")`,
      );
    } else put("VQS_TENANT_OVERRIDES", m[1]!, m[2] as Setting, m[3]!);
  }
  return { rate, bytes, push };
}

/** A warning for each folded variable set (src/main.ts logs them at start). */
export function foldedWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.entries(FOLDED)
    .filter(([name]) => env[name]?.trim())
    .map(
      ([name, setting]) =>
        `${name} is folded into VQS_TENANT_OVERRIDES (its entries team_id=value become team_id:${setting}=value); the old name stops working in the next release`,
    );
}

function entries(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

// `vqs token` (development only): a token signed by the local key of `npm start`, the one
// kept in its data directory (.data/dev-auth.json unless --data-dir says). `npm run token` runs
// the same code (scripts/token.ts). Against a production service, tokens come from its OIDC issuer.
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DEV_CLAIMS, DEV_DATA_DIR, devIssuer, type DevClaims } from "../../dev/dev-issuer.js";
import { UsageError } from "../errors.js";
import { examples, type ContextOf } from "./help.js";

export interface DevTokenOptions {
  readonly dataDir: string;
  readonly team?: string;
  readonly project?: string;
  readonly environment?: string;
  readonly ttlSeconds?: number;
}

/** Signs a development token; creates the key (as `npm start` would) when there is none. */
export async function issueDevToken(o: DevTokenOptions): Promise<string> {
  const issuer = await devIssuer(o.dataDir);
  const claims: Partial<DevClaims> = {
    ...(o.team ? { owner_id: o.team } : {}),
    ...(o.project ? { project_id: o.project } : {}),
    ...(o.environment ? { environment: o.environment } : {}),
  };
  return issuer.issue(claims, o.ttlSeconds ?? 86_400);
}

/** A --ttl value: whole seconds, at least 1. */
export function parseTtl(text: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    throw new UsageError(`--ttl "${text}" must be a whole number of seconds (1 or more)`);
  }
  return Number(text);
}

interface TokenOptions {
  readonly team?: string;
  readonly project?: string;
  readonly environment?: string;
  readonly ttl: string;
  readonly dataDir?: string;
}

export function tokenCommand(program: Command, contextOf: ContextOf): void {
  const token = program
    .command("token")
    .description(
      "print a development token signed by the local key of `npm start` (not in production)",
    )
    .option("--team <id>", "the token's team (owner_id claim)", DEV_CLAIMS.owner_id)
    .option("--project <id>", "the token's project (project_id claim)", DEV_CLAIMS.project_id)
    .option("--environment <name>", "the token's environment claim", DEV_CLAIMS.environment)
    .option("--ttl <seconds>", "how long the token is valid", "86400")
    .option(
      "--data-dir <dir>",
      `where \`npm start\` keeps its key (its --data-dir; default ${DEV_DATA_DIR})`,
    )
    .action(async (_o: TokenOptions, cmd: Command) => {
      const ctx = contextOf(cmd);
      const o = cmd.opts<TokenOptions>();
      if (ctx.env.NODE_ENV === "production") {
        throw new UsageError(
          "vqs token signs with the development key of `npm start`; a production service " +
            "trusts only its OIDC issuer (NODE_ENV=production)",
        );
      }
      const ttlSeconds = parseTtl(o.ttl);
      const dataDir = ctx.path(o.dataDir ?? DEV_DATA_DIR);
      if (!existsSync(join(dataDir, "dev-auth.json"))) {
        ctx.out.note(`no development key in ${dataDir} yet: created one, which npm start will use`);
      }
      const jwt = await issueDevToken({
        dataDir,
        ttlSeconds,
        ...(o.team ? { team: o.team } : {}),
        ...(o.project ? { project: o.project } : {}),
        ...(o.environment ? { environment: o.environment } : {}),
      });
      if (ctx.out.json) ctx.out.printJson({ token: jwt });
      else ctx.out.print(jwt);
    });
  examples(token, ["export VQS_TOKEN=$(vqs token)", "vqs token --team team_other --ttl 3600"]);
}

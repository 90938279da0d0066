// `npm run token`: prints a fresh development token signed by the local key of `npm start`.
// Optional flags: --team T --project P --environment E --ttl SECONDS. The same code as
// `vqs token` (src/cli/commands/token.ts), which also takes --data-dir and --json.
import { parseArgs } from "node:util";
import { issueDevToken, parseTtl } from "../src/cli/commands/token.js";

const { values } = parseArgs({
  options: {
    team: { type: "string" },
    project: { type: "string" },
    environment: { type: "string" },
    ttl: { type: "string", default: "86400" },
  },
});
const token = await issueDevToken({
  dataDir: process.env.VQS_DATA_DIR || ".data",
  ttlSeconds: parseTtl(values.ttl),
  ...(values.team ? { team: values.team } : {}),
  ...(values.project ? { project: values.project } : {}),
  ...(values.environment ? { environment: values.environment } : {}),
});
process.stdout.write(`${token}\n`);

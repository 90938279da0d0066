// `npm run token`: prints a fresh development token signed by the local key of `npm start`.
// Optional flags: --team T --project P --environment E --ttl SECONDS --data-dir DIR (npm start's,
// .data by default). The same code as `vqs token` (src/cli/commands/token.ts), which also takes --json.
import { parseArgs } from "node:util";
import { issueDevToken, parseTtl } from "../src/cli/commands/token.js";
import { DEV_DATA_DIR } from "../src/dev/dev-issuer.js";

const { values } = parseArgs({
  options: {
    team: { type: "string" },
    project: { type: "string" },
    environment: { type: "string" },
    ttl: { type: "string", default: "86400" },
    "data-dir": { type: "string", default: DEV_DATA_DIR },
  },
});
const token = await issueDevToken({
  dataDir: values["data-dir"],
  ttlSeconds: parseTtl(values.ttl),
  ...(values.team ? { team: values.team } : {}),
  ...(values.project ? { project: values.project } : {}),
  ...(values.environment ? { environment: values.environment } : {}),
});
process.stdout.write(`${token}\n`);

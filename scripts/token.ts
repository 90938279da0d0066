// `npm run token`: prints a fresh development token signed by the local key of `npm start`.
// Optional flags: --team T --project P --environment E --ttl SECONDS
import { parseArgs } from "node:util";
import { devIssuer } from "../src/dev/dev-issuer.js";

const { values } = parseArgs({
  options: {
    team: { type: "string" },
    project: { type: "string" },
    environment: { type: "string" },
    ttl: { type: "string", default: "86400" },
  },
});
const issuer = await devIssuer(process.env.VQS_DATA_DIR ?? ".data");
const token = await issuer.issue(
  {
    ...(values.team ? { owner_id: values.team } : {}),
    ...(values.project ? { project_id: values.project } : {}),
    ...(values.environment ? { environment: values.environment } : {}),
  },
  Number(values.ttl),
);
process.stdout.write(`${token}\n`);

// `npm run openapi`: writes docs/openapi.json, the OpenAPI 3.1 document the routes' schemas make
// (what GET /openapi.json serves). test/unit/openapi.test.ts fails while the committed file
// differs.
import { writeFileSync } from "node:fs";
import { openApiText } from "../src/http/openapi/document.js";

const path = new URL("../docs/openapi.json", import.meta.url);
writeFileSync(path, await openApiText());
process.stdout.write(`wrote ${path.pathname}\n`);

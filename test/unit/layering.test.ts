// The layering rule of src/ (docs/architecture.md, "Layers"), as lint enforces it: a file of the
// domain (src/queue) that imports NATS, Fastify, an adapter's folder or the composition root is a
// lint error; the same imports elsewhere, and the domain's own imports, are not.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

// The project's own config, running only the layering rule: without type information (which the
// rule does not use), so no TypeScript program is built; that took 5-50 s of the quick lane.
const eslint = new ESLint({
  cwd: new URL("../..", import.meta.url).pathname,
  ruleFilter: ({ ruleId }) => ruleId === "no-restricted-imports",
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
});

/** The restricted-import messages lint gives `code` as the file `path`. */
async function layeringErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

const ADAPTER_IMPORTS = {
  "the NATS client": `import { jetstream } from "@nats-io/jetstream";\nexport const j = jetstream;\n`,
  Fastify: `import type { FastifyInstance } from "fastify";\nexport type F = FastifyInstance;\n`,
  "an adapter's folder": `import type { JetStreamBroker } from "../nats/queue-state/jetstream-broker.js";\nexport type B = JetStreamBroker;\n`,
  "the HTTP layer, from a subfolder": `import { param } from "../../http/params.js";\nexport const p = param;\n`,
  "the composition root": `import { createGateway } from "../gateway.js";\nexport const g = createGateway;\n`,
};

describe("src/queue imports no adapter (lint)", () => {
  it.each(Object.entries(ADAPTER_IMPORTS))("refuses %s", async (_what, code) => {
    const path = code.includes("../../") ? "src/queue/settings/validate.ts" : "src/queue/limits.ts";
    expect(await layeringErrors(path, code)).toHaveLength(1);
  });

  it("allows the domain's own imports, the error catalogue and the logger", async () => {
    const code =
      `import { AppError } from "../errors.js";\nimport type { Logger } from "../logger.js";\n` +
      `import { LIMITS } from "./limits.js";\nexport const x = [AppError, LIMITS];\nexport type L = Logger;\n`;
    expect(await layeringErrors("src/queue/namespace.ts", code)).toEqual([]);
  });

  it("allows adapters to import their libraries", async () => {
    const code = `import { jetstream } from "@nats-io/jetstream";\nexport const j = jetstream;\n`;
    expect(await layeringErrors("src/nats/jetstream-adapter.ts", code)).toEqual([]);
  });
});

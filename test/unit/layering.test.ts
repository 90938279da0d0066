// The layering rule of src/ (docs/architecture.md, "Layers"), as lint enforces it: a file of the
// domain (src/queue) that imports NATS, Fastify, an adapter's folder or the composition root is a
// lint error; the same imports elsewhere, and the domain's own imports, are not. With it, the
// domain's one clock (no Date.now() in src/queue) and no import cycles in src/ and console/.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

// The project's own config, running only the rules looked at here: without type information
// (which they do not use), so no TypeScript program is built; that took 5-50 s of the quick lane.
const RULES = [
  "no-restricted-imports",
  "no-restricted-properties",
  "no-restricted-syntax",
  "import-x/no-cycle",
];
const eslint = new ESLint({
  cwd: new URL("../..", import.meta.url).pathname,
  ruleFilter: ({ ruleId }) => RULES.includes(ruleId),
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
});

/** The messages of rule `ruleId` that lint gives `code` as the file `path`. */
async function errorsOf(ruleId: string, path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return result!.messages.filter((m) => m.ruleId === ruleId).map((m) => m.message);
}

const layeringErrors = (path: string, code: string) =>
  errorsOf("no-restricted-imports", path, code);

/** What the clock rules say of `code` as a file of `path`. */
async function clockErrors(path: string, code: string): Promise<string[]> {
  return [
    ...(await errorsOf("no-restricted-properties", path, code)),
    ...(await errorsOf("no-restricted-syntax", path, code)),
  ];
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

describe("src/queue reads the time from its injected clock (lint)", () => {
  it.each([
    ["Date.now()", "export const t = Date.now();\n"],
    ["Date.now as a clock", "export const clock: () => number = Date.now;\n"],
    ["new Date()", "export const d = new Date();\n"],
    ["Date()", "export const s = Date();\n"],
  ])("refuses %s", async (_what, code) => {
    expect(await clockErrors("src/queue/push-delivery/pusher.ts", code)).toHaveLength(1);
  });

  it("allows dates made from a time, and Date.now outside the domain", async () => {
    const code = "export const at = (now: () => number) => new Date(now()).toISOString();\n";
    expect(await clockErrors("src/queue/push-delivery/cloud-event.ts", code)).toEqual([]);
    const host = "export const t = Date.now();\n";
    expect(await clockErrors("src/gateway.ts", host)).toEqual([]);
  });
});

describe("no import cycles in src/ and console/ (lint)", () => {
  // Each text stands for a file of the tree that the named module already imports (queue-service
  // imports limits.ts, the console's pages import console-context.ts): importing it back closes
  // a cycle.
  it.each([
    [
      "src/queue/limits.ts",
      `import { QueueService } from "./queue-service.js";\nexport const q = QueueService;\n`,
    ],
    ["console/src/console-context.ts", `import { App } from "./app.js";\nexport const a = App;\n`],
  ])("refuses an import that closes a cycle (%s)", async (path, code) => {
    expect(await errorsOf("import-x/no-cycle", path, code)).toHaveLength(1);
  });

  it("allows the same import where nothing imports the importer", async () => {
    const code = `import { QueueService } from "./queue-service.js";\nexport const q = QueueService;\n`;
    expect(await errorsOf("import-x/no-cycle", "src/queue/not-imported.ts", code)).toEqual([]);
  });
});

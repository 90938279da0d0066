// The OpenAPI document (src/http/openapi/): valid OpenAPI 3.1, committed as docs/openapi.json
// (`npm run openapi`), and in step with the API reference's tables (docs/api.md). The served document and the
// gateway's routes: test/integration/management/openapi.test.ts.
import { Validator } from "@seriousme/openapi-schema-validator";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";
import { openApiText } from "../../src/http/openapi/document.js";

interface Operation {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  parameters?: { in: string; name: string }[];
  requestBody?: { required: boolean };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const text = await openApiText();
const doc = JSON.parse(text) as Document;
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const reference = read("docs/api.md");
/** Every page a user reads: the headers any of them names must be in the document. */
const userDocs = ["README.md", "docs/api.md", "docs/cli.md", "docs/console.md", "docs/errors.md"]
  .map(read)
  .join("\n");

/** A path item's operations: its keys that are HTTP methods (it may also have `servers`). */
const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);
function operations(ops: Record<string, Operation>): [string, Operation][] {
  return Object.entries(ops).filter(([m]) => METHODS.has(m));
}

/** The URLs of a path's own servers; none: the document's default (`/`). */
function serversOf(path: string): string[] {
  const item = doc.paths[path] as unknown as { servers?: { url: string }[] };
  return (item.servers ?? []).map((s) => s.url);
}

/** "METHOD /path" of every operation, path parameters unnamed (`{}`). */
function documented(): string[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    operations(ops).map(([m]) => `${m.toUpperCase()} ${path.replace(/\{\w+\}/g, "{}")}`),
  );
}

/** The docs/api.md section under `## title`, up to the next `## `. */
function section(title: string): string {
  const start = reference.indexOf(`\n## ${title}\n`);
  expect(start, title).toBeGreaterThan(-1);
  const end = reference.indexOf("\n## ", start + 1);
  return reference.slice(start, end === -1 ? undefined : end);
}

/** "METHOD /path" of the table rows of docs/api.md sections; `...` is `/api/v3/topic/{topic}`. */
function referenceRoutes(...titles: string[]): string[] {
  const routes = titles.flatMap((title) =>
    section(title)
      .split("\n")
      .filter((line) => line.startsWith("|"))
      .flatMap((line) => [...line.matchAll(/`(GET|POST|PUT|PATCH|DELETE) ([^`?]+)[^`]*`/g)])
      .map((m) => `${m[1]} ${m[2]!.replace(/^\.\.\./, "/api/v3/topic/{topic}")}`),
  );
  return routes.map((r) => r.replace(/\{\w+\}/g, "{}"));
}

describe("the OpenAPI document", () => {
  it("is valid OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(text);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("is committed as docs/openapi.json (run `npm run openapi` after changing a route)", () => {
    const committed = readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8");
    expect(committed).toBe(text);
  });

  it("has the routes of the API reference's tables, and no other", () => {
    const inReference = referenceRoutes("Operations", "Management API");
    expect(new Set(inReference).size).toBe(inReference.length);
    expect([...inReference].sort()).toEqual([...documented()].sort());
  });

  it("names every Vqs-* header the user docs name", () => {
    const headers = new Set(userDocs.match(/Vqs-[A-Za-z]+(?:-[A-Za-z]+)*(?![-A-Za-z*])/g));
    expect(headers.size).toBeGreaterThan(10);
    for (const header of headers) expect(text, header).toContain(`"${header}"`);
  });

  it("describes each operation: an ID, a summary, a success, and its errors with codes", () => {
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of operations(ops)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.operationId, where).toBeTruthy();
        expect(ids.has(op.operationId!), where).toBe(false);
        ids.add(op.operationId!);
        expect(op.summary, where).toBeTruthy();
        const statuses = Object.keys(op.responses);
        expect(
          statuses.some((s) => /^2\d\d$/.test(s)),
          where,
        ).toBe(true);
        expect(statuses, where).not.toContain("default");
        if (path.startsWith("/api/v3/")) {
          // Bearer auth (the document's default), so 401 with its codes.
          expect(op.security, where).toBeUndefined();
          expect(statuses, where).toContain("401");
        } else {
          expect(op.security, where).toEqual([]);
        }
        for (const status of statuses.filter((s) => Number(s) >= 400)) {
          const schema = op.responses[status]!.content!["application/json"]!.schema;
          const codes = JSON.stringify(schema).match(/"enum":\[([^\]]+)\]/)![1]!;
          for (const code of JSON.parse(`[${codes}]`) as (keyof typeof ERRORS)[]) {
            expect(ERRORS[code]?.status, `${where} ${code}`).toBe(Number(status));
          }
        }
      }
    }
  });

  it("requires a body where the route does: not for publish (empty payload) nor redrive ({})", () => {
    const required = Object.values(doc.paths).flatMap((ops) =>
      operations(ops)
        .map(([, op]) => op)
        .filter((op) => op.requestBody)
        .map((op) => [op.operationId, op.requestBody!.required]),
    );
    expect(Object.fromEntries(required)).toEqual({
      publishMessage: false,
      publishBatch: true,
      changeVisibility: true,
      changeVisibilityAlternate: true,
      putConsumerSettings: true,
      redriveDeadLetters: false,
      seekConsumerGroup: true,
    });
    expect(text).not.toContain("x-optional-body");
  });

  it("gives the v3 API's paths and the push keys' /queues-proxy as a second server, and no other path", () => {
    // What http/queues-proxy.ts mirrors; the test of the routes under the prefix is
    // test/integration/management/openapi.test.ts.
    const mirrored = Object.keys(doc.paths).filter(
      (p) => p.startsWith("/api/") || p === "/.well-known/jwks.json",
    );
    expect(mirrored.length).toBeGreaterThan(10);
    for (const path of Object.keys(doc.paths)) {
      expect(serversOf(path), path).toEqual(mirrored.includes(path) ? ["/", "/queues-proxy"] : []);
    }
    expect(reference).toContain("/queues-proxy");
  });

  it("describes deliveries as multipart/mixed and NDJSON", () => {
    for (const path of [
      "/api/v3/topic/{topic}/consumer/{group}",
      "/api/v3/topic/{topic}/consumer/{group}/id/{messageId}",
    ]) {
      const content = doc.paths[path]!.post!.responses["200"]!.content!;
      expect(Object.keys(content).sort()).toEqual(["application/x-ndjson", "multipart/mixed"]);
    }
  });
});

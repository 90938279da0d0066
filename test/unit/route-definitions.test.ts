// Drift between what the gateway checks, what it documents and what its callers are typed with.
// A route without a schema has no operation ID, which openapi.test.ts refuses; the document lists
// every route of the gateway (test/integration/management/openapi.test.ts). Here: every value a
// definition checks answers a code its operation documents; the document's components are the
// definitions; and the service, the CLI and the console are typed with the definitions' types
// (type assertions: `npm run typecheck` fails when they drift, as pg-boss's type test does).
import { readFileSync } from "node:fs";
import type { Static } from "typebox";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as management from "../../src/api/management.js";
import * as messages from "../../src/api/messages.js";
import { INPUT_ERROR, type InputError } from "../../src/api/schema.js";
import * as settings from "../../src/api/settings.js";
import type { ApiClient } from "../../src/cli/api-client.js";
import * as managementRoutes from "../../src/http/openapi/management-routes.js";
import * as messageRoutes from "../../src/http/openapi/message-routes.js";
import * as operations from "../../src/http/openapi/operations.js";
import * as settingsRoutes from "../../src/http/openapi/settings-routes.js";
import type { ManagementService } from "../../src/queue/management/management-service.js";
import type * as consoleTypes from "../../console/src/types.js";

type Schema = Record<string, unknown>;

const ROUTES: Record<string, Schema> = {
  ...(managementRoutes as Record<string, Schema>),
  ...(settingsRoutes as Record<string, Schema>),
  ...(operations as Record<string, Schema>),
  ...Object.fromEntries(
    Object.entries(messageRoutes).map(([name, s]) => [
      name,
      (typeof s === "function" ? s(false) : s) as Schema,
    ]),
  ),
  CHANGE_VISIBILITY_ALTERNATE: messageRoutes.changeVisibility(true) as Schema,
};

/**
 * Every InputError in a schema, with where it is; but a batch part's (`x-part-headers`): a bad
 * part fails alone, in its result, not the request.
 */
function inputErrors(schema: unknown, at = ""): [string, InputError][] {
  if (typeof schema !== "object" || schema === null) return [];
  const own = (schema as Schema)[INPUT_ERROR] as InputError | undefined;
  return [
    ...(own ? [[at, own] as [string, InputError]] : []),
    ...Object.entries(schema)
      .filter(([k]) => k !== "x-part-headers")
      .flatMap(([k, v]) => inputErrors(v, `${at}/${k}`)),
  ];
}

/** The error codes an operation's responses document. */
function documentedCodes(route: Schema): Set<string> {
  const codes = new Set<string>();
  for (const response of Object.values((route.response ?? {}) as Record<string, Schema>)) {
    const allOf = (response.allOf ?? []) as Schema[];
    const code = (allOf[1] as { properties?: { error?: { properties?: { code?: Schema } } } })
      ?.properties?.error?.properties?.code;
    for (const c of (code?.enum ?? []) as string[]) codes.add(c);
  }
  return codes;
}

describe("route definitions", () => {
  it("document every code a checked value answers, and bound every checked integer", () => {
    let checked = 0;
    for (const [name, route] of Object.entries(ROUTES)) {
      const documented = documentedCodes(route);
      for (const [at, error] of inputErrors(route)) {
        checked++;
        for (const code of [error.code, error.starCode].filter((c) => c !== undefined)) {
          expect([name, at, documented.has(code)]).toEqual([name, at, true]);
        }
      }
    }
    // The management API's paths, queries and seek body; the publish and receive headers.
    expect(checked).toBeGreaterThanOrEqual(20);
    for (const [name, p] of Object.entries({
      ...management.LIST_TOPICS_QUERY.properties,
      ...management.PEEK_QUERY.properties,
    })) {
      const s = p as { type?: string; minimum?: number; maximum?: number };
      if (s.type !== "integer") continue;
      // A refusal names them: "`limit` must be an integer from 1 to 100."
      expect([name, typeof s.minimum, typeof s.maximum]).toEqual([name, "number", "number"]);
    }
  });

  it("check the topic and group of every path but the settings' (which may be a pattern)", () => {
    const paths = Object.entries(ROUTES).filter(([, r]) => r.params !== undefined);
    expect(paths.length).toBeGreaterThan(10);
    for (const [name, route] of paths) {
      const properties = (route.params as { properties: Record<string, Schema> }).properties;
      const settings = properties.topic?.pattern === "^[A-Za-z0-9_-]+\\*?$";
      for (const param of ["topic", "group"].filter((p) => properties[p] && !settings)) {
        expect([name, param, properties[param]![INPUT_ERROR] !== undefined]).toEqual([
          name,
          param,
          true,
        ]);
      }
    }
  });

  it("are the document's components, and leave their checks out of it", () => {
    const doc = JSON.parse(readFileSync("docs/openapi.json", "utf8")) as {
      components: { schemas: Record<string, unknown> };
    };
    expect(JSON.stringify(doc)).not.toContain(INPUT_ERROR);
    for (const component of [
      ...management.MANAGEMENT_COMPONENTS,
      ...settings.SETTINGS_COMPONENTS,
      messages.DEAD_LETTER_ORIGIN,
      messages.DELIVERED_MESSAGE,
    ]) {
      const { $id, ...schema } = JSON.parse(JSON.stringify(component)) as { $id: string };
      // The document names components by `$id`, references become `#/components/schemas/…`,
      // and @fastify/swagger writes base64 content as `format: byte`.
      const refs = JSON.parse(
        JSON.stringify(schema)
          .replace(/"\$ref":"(\w+)#"/g, '"$ref":"#/components/schemas/$1"')
          .replace(/"contentEncoding":"base64"/g, '"format":"byte"'),
      ) as unknown;
      expect([$id, doc.components.schemas[$id]]).toEqual([$id, refs]);
    }
  });

  it("type the service, the CLI and the console with the definitions' types", () => {
    type Answer<F> = F extends (...args: never[]) => Promise<infer T> ? T : never;
    expectTypeOf<Answer<ManagementService["listTopics"]>>().toEqualTypeOf<
      Static<typeof management.TOPIC_PAGE>
    >();
    expectTypeOf<Answer<ManagementService["topic"]>>().toEqualTypeOf<
      Static<typeof management.TOPIC>
    >();
    expectTypeOf<Answer<ManagementService["consumers"]>>().toEqualTypeOf<
      Static<typeof management.CONSUMER_GROUPS>
    >();
    expectTypeOf<Answer<ManagementService["peek"]>>().toEqualTypeOf<
      Static<typeof management.PEEK_PAGE>
    >();
    expectTypeOf<Answer<ManagementService["purge"]>>().toEqualTypeOf<
      Static<typeof management.PURGED>
    >();
    expectTypeOf<Answer<ApiClient["topic"]>>().toEqualTypeOf<management.Topic>();
    expectTypeOf<Answer<ApiClient["groups"]>>().toEqualTypeOf<management.ConsumerGroup[]>();
    expectTypeOf<Answer<ApiClient["peek"]>>().toEqualTypeOf<management.PeekPage>();
    expectTypeOf<Answer<ApiClient["namespaces"]>>().toEqualTypeOf<management.Namespace[]>();
    expectTypeOf<consoleTypes.Topic>().toEqualTypeOf<management.Topic>();
    expectTypeOf<consoleTypes.Group>().toEqualTypeOf<management.ConsumerGroup>();
    expectTypeOf<consoleTypes.PeekPage>().toEqualTypeOf<management.PeekPage>();
    expectTypeOf<consoleTypes.NamespaceInfo>().toEqualTypeOf<management.Namespace>();
    expectTypeOf<
      Answer<ApiClient["getSettings"]>
    >().toEqualTypeOf<settings.ConsumerSettingsDocument | null>();
    expectTypeOf<Answer<ApiClient["listSettings"]>>().toEqualTypeOf<
      settings.ConsumerSettingsDocument[]
    >();
    expectTypeOf<
      Parameters<ApiClient["putSettings"]>[2]
    >().toEqualTypeOf<settings.ConsumerSettingsInput>();
    expectTypeOf<Answer<ApiClient["redrive"]>>().toEqualTypeOf<settings.RedriveResult>();
    expectTypeOf<consoleTypes.SettingsDocument>().toEqualTypeOf<settings.ConsumerSettingsDocument>();
    expectTypeOf<consoleTypes.RedriveResult>().toEqualTypeOf<settings.RedriveResult>();
    expectTypeOf<Answer<ApiClient["publish"]>>().toEqualTypeOf<messages.PublishAnswer>();
    expectTypeOf<consoleTypes.PublishResult>().toEqualTypeOf<messages.PublishAnswer>();
    expectTypeOf<Answer<ApiClient["receive"]>["messages"]>().toEqualTypeOf<
      messages.DeliveredMessage[]
    >();
  });
});

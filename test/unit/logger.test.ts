import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, lazyChildLoggerFactory } from "../../src/logger.js";

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, stream), lines };
}

const flush = () => new Promise((r) => setImmediate(r));

describe("lazy request loggers", () => {
  it("log with their bindings at enabled levels and nothing below", async () => {
    const { logger, lines } = capture("warn");
    const log = lazyChildLoggerFactory.call(null, logger, { reqId: "r1" }, {});
    log.info("not written");
    log.debug({ a: 1 }, "not written");
    expect(log.level).toBe("warn");
    log.warn({ code: "x" }, "written");
    log.error(new Error("boom"), "also written");
    const nested = log.child({ part: 2 });
    nested.warn("nested");
    await flush();
    expect(lines.map((l) => [l.msg, l.reqId, l.level])).toEqual([
      ["written", "r1", 40],
      ["also written", "r1", 50],
      ["nested", "r1", 40],
    ]);
    expect(lines[0]).toMatchObject({ code: "x", service: "vqs" });
    expect(lines[1]).toMatchObject({ err: { message: "boom" } });
    expect(lines[2]).toMatchObject({ part: 2 });
  });

  it("follow a level set on the request logger, and take a per-route level eagerly", async () => {
    const { logger, lines } = capture("warn");
    const log = lazyChildLoggerFactory.call(null, logger, { reqId: "r2" }, {});
    log.level = "debug";
    log.debug("now written");
    const routeLevel = lazyChildLoggerFactory.call(
      null,
      logger,
      { reqId: "r3" },
      { level: "info" },
    );
    routeLevel.info("route level");
    await flush();
    expect(lines.map((l) => [l.msg, l.reqId])).toEqual([
      ["now written", "r2"],
      ["route level", "r3"],
    ]);
  });
});

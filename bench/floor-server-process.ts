// The HTTP floor of `npm run bench:floor`: the gateway's own Fastify, with no plugins, hooks, logger or
// metrics, answering 204 on routes shaped like the gateway's publish, receive and acknowledge.
// What a gateway request costs above this is the gateway's own work. Started by
// bench/floor.ts as `node --import tsx bench/floor-server-process.ts`; tells its URL
// over IPC ({type: "listening", url}) and exits when the parent goes away or on SIGTERM.
import Fastify from "fastify";
import type { AddressInfo } from "node:net";

// The gateway's router options (receipt handles are long path parameters).
const app = Fastify({ logger: false, routerOptions: { maxParamLength: 2048 } });
// A publish body is read as the gateway reads it (whole, as bytes), then dropped.
app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
const empty = (_req: unknown, reply: { code(n: number): { send(): void } }): void => {
  reply.code(204).send();
};
app.post("/api/v3/topic/:topic", empty);
app.post("/api/v3/topic/:topic/consumer/:group", empty);
app.delete("/api/v3/topic/:topic/consumer/:group/lease/:handle", empty);

await app.listen({ host: "127.0.0.1", port: 0 });
const { port } = app.server.address() as AddressInfo;
process.send?.({ type: "listening", url: `http://127.0.0.1:${port}` });
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));

// A Fastify app for testing routes' refusals of bad input through inject: the gateway's error
// handling and definitions' checks, bodies handed over as bytes (as in the API scope), and a
// stand-in for what the routes call that throws if reached.
import Fastify, { type FastifyInstance } from "fastify";
import { installErrorHandling } from "../../src/http/error-handler.js";
import { installOpenApi } from "../../src/http/openapi/plugin.js";

/** Every method throws when called (a route reaching the service is a failure of the test). */
export function unused<T>(what: string): T {
  return new Proxy(
    {},
    {
      get: (_target, key) => () => {
        throw new Error(`${what}: ${String(key)} called`);
      },
    },
  ) as T;
}

/** The app with the routes `register` adds, ready. */
export async function inputApp(register: (app: FastifyInstance) => void): Promise<FastifyInstance> {
  const app = Fastify({ routerOptions: { maxParamLength: 2048 } });
  installErrorHandling(app);
  await installOpenApi(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, next) => next(null, body));
  register(app);
  await app.ready();
  return app;
}

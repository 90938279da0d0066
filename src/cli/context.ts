// What every command gets: the process (streams, environment, working directory), the global
// options resolved against the environment, its Output, and the API client. Options win over
// environment variables, which win over defaults.
import { isAbsolute, resolve } from "node:path";
import { ApiClient } from "./api-client.js";
import { UsageError } from "./errors.js";
import { noInterrupts } from "./terminal/interrupts.js";
import { Output, type InStream, type Io, type OutStream } from "./output.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The program's own options, accepted before or after the command. */
export interface GlobalOptions {
  readonly url?: string;
  readonly token?: string;
  readonly deploymentId?: string;
  readonly namespace?: string;
  readonly yes?: boolean;
  readonly json?: boolean;
  readonly color?: boolean;
}

export class Context {
  readonly out: Output;
  readonly #io: Io;
  readonly #options: GlobalOptions;
  readonly #version: string;

  constructor(io: Io, options: GlobalOptions, version: string) {
    this.#io = io;
    this.#options = options;
    this.#version = version;
    this.out = new Output(io, {
      json: options.json === true,
      ...(options.color !== undefined ? { color: options.color } : {}),
    });
  }

  get env(): NodeJS.ProcessEnv {
    return this.#io.env;
  }

  /** Takes Ctrl-C over: the first one aborts this signal instead of ending the process. */
  interrupts(): AbortSignal {
    return (this.#io.interrupts ?? noInterrupts).take();
  }

  /** Where the tool writes its progress (a bar only when this is a terminal). */
  get stderr(): OutStream {
    return this.#io.stderr;
  }

  /** The namespace an operator acts in (--namespace / VQS_NAMESPACE), or null: the token's. */
  get namespace(): string | null {
    return this.#options.namespace ?? nonEmpty(this.#io.env.VQS_NAMESPACE) ?? null;
  }

  /** Standard input (none in process unless a test gives it: an empty stream). */
  get stdin(): InStream {
    return this.#io.stdin ?? { isTTY: false, async *[Symbol.asyncIterator]() {} };
  }

  /** A path given by the user, relative to the working directory. */
  path(p: string): string {
    return isAbsolute(p) ? p : resolve(this.#io.cwd, p);
  }

  /** The API client: --url / VQS_URL, --token / VQS_TOKEN, --deployment-id / VQS_DEPLOYMENT_ID. */
  api(): ApiClient {
    const env = this.#io.env;
    const text = this.#options.url ?? nonEmpty(env.VQS_URL) ?? DEFAULT_URL;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new UsageError(`--url / VQS_URL "${text}" is not a URL (e.g. ${DEFAULT_URL})`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
      throw new UsageError(`--url / VQS_URL "${text}" must be an http(s) URL without query`);
    }
    const token = this.#options.token ?? nonEmpty(env.VQS_TOKEN);
    if (!token) {
      throw new UsageError(
        "no token: pass --token or set VQS_TOKEN (against `npm start`: export VQS_TOKEN=$(vqs token))",
      );
    }
    const deploymentId = this.#options.deploymentId ?? nonEmpty(env.VQS_DEPLOYMENT_ID) ?? null;
    const namespace = this.namespace;
    if (namespace !== null && deploymentId !== null) {
      throw new UsageError(
        "--namespace names the deployment itself (team/project/environment/deployment): " +
          "leave out --deployment-id / VQS_DEPLOYMENT_ID",
      );
    }
    return new ApiClient(
      { url, token, deploymentId, namespace },
      { userAgent: `vqs-cli/${this.#version}` },
    );
  }
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

// Type-aware lint for src/, test/, scripts/ and bench/.
import js from "@eslint/js";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import globals from "globals";
import tseslint from "typescript-eslint";

/** What src/queue may not import: adapters' libraries, and the folders and files around it. */
const DOMAIN_MAY_NOT_IMPORT = [
  {
    group: ["@nats-io/*", "fastify", "@fastify/*", "undici", "prom-client", "jose"],
    message:
      "src/queue is the domain: adapters' libraries belong in src/nats, src/http, src/outbound or src/auth.",
  },
  {
    regex: "^(?:\\.\\./)+(?:nats|http|outbound|auth|cli|dev)/",
    message:
      "src/queue imports no adapter: define a port in src/queue and implement it there instead.",
  },
  {
    regex: "^(?:\\.\\./)+(?:gateway|app|main|metrics|config)\\.js$",
    message:
      "src/queue does not import the composition root, the HTTP app, metrics or config: pass what it needs in.",
  },
];

const DOMAIN_CLOCK =
  "src/queue reads the time from the clock it is given (a `now: () => number` dependency), not the host's.";

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "dist-bench/**",
      "node_modules/**",
      ".data/**",
      // Downloaded servers and tools, and the CLI bundles the tests build (gitignored).
      ".cache/**",
      ".scratch/**",
      ".build-test-*/**",
      "helm/**",
      "deploy/**",
      // What the Workflow builder writes into the example app (gitignored).
      "examples/**/.well-known/**",
      "examples/**/.vercel/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    // The domain imports no adapter: no NATS client, no Fastify, no HTTP client, nothing of the
    // layers around it. It reaches them only through the ports it defines (docs/architecture.md,
    // "Layers"); test/unit/layering.test.ts proves the rule fires.
    files: ["src/queue/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: DOMAIN_MAY_NOT_IMPORT }],
      // One clock: the domain reads the time from the `now` it is given (the composition root
      // passes the server-corrected one; tests pass their own), never from the host.
      "no-restricted-properties": [
        "error",
        { object: "Date", property: "now", message: DOMAIN_CLOCK },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: DOMAIN_CLOCK,
        },
        { selector: "CallExpression[callee.name='Date']", message: DOMAIN_CLOCK },
      ],
    },
  },
  {
    // No import cycles in the service or the console (docs/architecture.md, "Dependencies"). The
    // rule follows value imports: a cycle of them makes one module's exports undefined while the
    // other starts. Specifiers name the .js a .ts(x) compiles to.
    files: ["src/**/*.ts", "console/src/**/*.{ts,tsx}"],
    plugins: { "import-x": importX },
    settings: {
      "import-x/extensions": [".ts", ".tsx", ".js"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts", ".tsx"] },
      "import-x/resolver-next": [
        createNodeResolver({
          extensions: [".ts", ".tsx", ".js"],
          extensionAlias: { ".js": [".ts", ".tsx", ".js"] },
        }),
      ],
    },
    rules: { "import-x/no-cycle": ["error", { ignoreExternal: true }] },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: globals.node,
    },
  },
);

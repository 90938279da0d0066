// Type-aware lint for src/, test/, scripts/ and bench/.
import js from "@eslint/js";
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

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      ".data/**",
      ".scratch/**",
      ".build-test-*/**",
      "helm/**",
      "deploy/**",
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
    },
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

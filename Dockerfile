# vqs gateway image. Needs BuildKit (default since Docker 23) for RUN --mount.
#   docker build -t vqs:0.1.0 .          (--build-arg NODE_IMAGE=<mirror>/node:22-bookworm-slim)
#   docker run --rm -p 8080:8080 -e NATS_URL=nats://host.docker.internal:4222 \
#     -e VQS_REGION=iad1 -e VQS_RECEIPT_SECRET="$(openssl rand -hex 32)" \
#     -e VQS_OIDC_JWKS_URL=https://auth.example.com/.well-known/jwks.json \
#     -e VQS_OIDC_ISSUER=https://auth.example.com/ -e VQS_OIDC_AUDIENCE=vqs \
#     vqs:0.1.0
# NODE_ENV=production (set below) refuses to start without NATS_URL, the OIDC settings and the
# receipt secret. How the image is tested without a Docker engine: docs/operations.md#container-image.

ARG NODE_IMAGE=node:22-bookworm-slim

############################
# build: compile TypeScript -> dist/, bundle the web console -> dist/console/
############################
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first so the layer is cached until the lockfile changes. patches/ holds our fix to
# a dependency (patch-package applies it on install; docs/architecture.md, "Dependencies").
COPY package.json package-lock.json ./
COPY patches/ ./patches/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --workspaces=false --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY src/ ./src/
COPY console/ ./console/
COPY scripts/ ./scripts/
RUN npm run build

############################
# runtime: production dependencies + dist/ only
############################
FROM ${NODE_IMAGE} AS runtime

ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0
WORKDIR /app

# --ignore-scripts: no install/postinstall hooks run in the final image.
# NODE_DISABLE_COMPILE_CACHE: npm 10.9+ would leave its V8 compile cache (~3 MB) in /tmp of this
# layer (a tmpfs mount of /tmp would do too, but buildah 1.28 then drops /tmp from the image).
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    NODE_DISABLE_COMPILE_CACHE=1 npm ci --omit=dev --ignore-scripts --workspaces=false --no-audit --no-fund

# The patched dependency as the build stage's install left it (no install scripts run here).
COPY --from=build /app/node_modules/@nats-io/nats-core/ ./node_modules/@nats-io/nats-core/

# Files stay root-owned (read-only for the runtime user).
COPY --from=build /app/dist ./dist

# The `vqs` command-line tool on PATH: docker run --rm <image> vqs --help
RUN ln -s /app/dist/cli/main.js /usr/local/bin/vqs

# The official image's unprivileged "node" user (uid/gid 1000). Numeric so
# Kubernetes runAsNonRoot can verify it.
USER 1000:1000

EXPOSE 8080

# Slim images ship no curl/wget: use Node's built-in fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||8080}/healthz`,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# Node runs as PID 1: the app must handle SIGTERM/SIGINT itself (graceful shutdown).
CMD ["node", "dist/main.js"]

# The gate server image, in two stages. `build` holds the compiler toolchain that
# better-sqlite3's install needs and runs the TypeScript build; the final stage holds only
# Node, git (>= 2.36) and bash for the hook shims, the built code and the production
# node_modules, owned by root and run as the unprivileged `node` user. The health check is
# Node's own fetch (no curl in the image).
# The base is pinned by exact version. Pin it by digest too where Docker Hub is reachable:
#   docker buildx imagetools inspect node:20.20.2-bookworm-slim   (then FROM node:20.20.2-bookworm-slim@sha256:...)
# The build context is cut down by .dockerignore: data/ (tokens, audit log, hook secret) never enters it.

FROM node:20.20.2-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY hooks ./hooks
# npm ci runs `prepare` (the build); then the dev dependencies go.
RUN npm ci && npm prune --omit=dev

FROM node:20.20.2-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown node:node /data && chmod 0700 /data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/hooks ./hooks
ENV NODE_ENV=production
# Every CLI command in the container (docker compose exec gate node dist/cli.js ...) uses the served data folder.
ENV PATCHGATE_DATA=/data
USER node
VOLUME /data
EXPOSE 7005
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:7005/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/cli.js", "serve", "--data", "/data", "--host", "0.0.0.0", "--port", "7005"]

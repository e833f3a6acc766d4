# The gate server: Node 20 with git (>= 2.36) and bash for the hook shims; curl for the health check.
FROM node:20-slim
RUN apt-get update && apt-get install -y --no-install-recommends git curl ca-certificates python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY hooks ./hooks
RUN npm ci && npm prune --omit=dev
VOLUME /data
EXPOSE 7005
CMD ["node", "dist/cli.js", "serve", "--data", "/data", "--host", "0.0.0.0", "--port", "7005"]

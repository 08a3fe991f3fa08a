# One image for every role: `svc serve`, `svc worker`, `svc migrate`.
# Built in one stage (everything installed, the console and the server compiled), shipped from a
# second that holds the compiled output and production dependencies only: no TypeScript, no tsx,
# no test or build tools. apps/api/bin/svc runs apps/api/dist/cli.js.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY . .
RUN pnpm install --frozen-lockfile && pnpm build \
  && rm -rf node_modules apps/*/node_modules packages/*/node_modules e2e/node_modules bench/node_modules \
  && pnpm install --frozen-lockfile --prod --offline

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=7150
EXPOSE 7150
ENTRYPOINT ["/app/apps/api/bin/svc"]
CMD ["serve"]

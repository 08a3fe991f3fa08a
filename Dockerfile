# One image for every role: `svc serve`, `svc worker`, `svc migrate`.
FROM node:20-bookworm-slim
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY . .
RUN pnpm install --frozen-lockfile && pnpm build
ENV NODE_ENV=production HOST=0.0.0.0 PORT=7150
EXPOSE 7150
ENTRYPOINT ["/app/apps/api/bin/svc"]
CMD ["serve"]

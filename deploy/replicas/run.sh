#!/usr/bin/env bash
# Three `svc serve --no-worker` replicas and two `svc worker` processes on one PostgreSQL, behind
# HAProxy (deploy/replicas/haproxy.cfg), on one machine: the shape docs/operations.md "Replicas"
# describes, to try it or to watch a replica leave (kill -9 or kill -TERM one of the pids it
# prints). e2e/replicas.test.ts runs the same shape under load and checks it.
#
#   pnpm build
#   DATABASE_URL=postgres://... SVC_ENCRYPTION_KEY=$(openssl rand -base64 32) deploy/replicas/run.sh
#
# Clients use http://127.0.0.1:$LB_PORT (default 7150); the replicas listen on the next three
# ports. Without ENGINE_ISSUER each replica runs its own development engine on a port of its
# own: the API works through the balancer, but a browser sign-in needs one engine for all (set
# ENGINE_ISSUER and its client settings, as README.md "Production" says). Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${DATABASE_URL:?set DATABASE_URL (one PostgreSQL for every process)}"
: "${SVC_ENCRYPTION_KEY:?set SVC_ENCRYPTION_KEY (the same for every process: openssl rand -base64 32)}"
HAPROXY="${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}"
[ -x "$HAPROXY" ] || { echo "haproxy not found (Debian: apt-get install haproxy)" >&2; exit 1; }
[ -f apps/api/dist/cli.js ] || { echo "no compiled build: run pnpm build first" >&2; exit 1; }

LB_PORT="${LB_PORT:-7150}"
export PUBLIC_URL="${PUBLIC_URL:-http://127.0.0.1:$LB_PORT}"
# HAProxy's X-Forwarded-For names the client: per-IP rate limits count clients, not the proxy.
export TRUST_PROXY="${TRUST_PROXY:-loopback}"
export HOST=127.0.0.1
if [ -z "${ENGINE_ISSUER:-}" ]; then export DEV_ENGINE_PORT=0; fi
svc=apps/api/bin/svc

pids=()
stop() {
  trap - EXIT INT TERM
  # SIGTERM: each replica stops being ready, drains its requests and exits (docs/operations.md "Probes").
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait
}
trap stop EXIT INT TERM

"$svc" migrate
for i in 1 2 3; do
  PORT=$((LB_PORT + i)) "$svc" serve --no-worker &
  pids+=($!)
  echo "replica api$i: pid $! on 127.0.0.1:$((LB_PORT + i))"
done
for i in 1 2; do
  "$svc" worker &
  pids+=($!)
  echo "worker $i: pid $!"
done
SVC_LB_BIND="127.0.0.1:$LB_PORT" \
  SVC_API_1="127.0.0.1:$((LB_PORT + 1))" SVC_API_2="127.0.0.1:$((LB_PORT + 2))" SVC_API_3="127.0.0.1:$((LB_PORT + 3))" \
  "$HAPROXY" -db -f deploy/replicas/haproxy.cfg &
pids+=($!)
echo "haproxy: pid $! on $PUBLIC_URL"
# Until Ctrl-C, or until HAProxy itself exits (a replica or worker exiting is what one watches).
wait "${pids[-1]}"

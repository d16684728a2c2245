#!/bin/sh
# Readiness probe for the systemd unit (ExecStartPost): wait until the agent's /healthz answers
# 200, i.e. the agent listens and its CDP connection is attached. Fails after WAIT_HEALTHY_SECONDS.
set -eu
host=${HOST:-127.0.0.1}
case "$host" in 0.0.0.0 | '::' | '') host=127.0.0.1 ;; esac
port=${PORT:-10001}
deadline=${WAIT_HEALTHY_SECONDS:-50}
url="http://$host:$port/healthz"
i=0
while [ "$i" -lt "$((deadline * 10))" ]; do
  if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$url"; then
    exit 0
  fi
  sleep 0.1
  i=$((i + 1))
done
echo "browser-telemetry-agent: $url did not answer 200 within ${deadline}s" >&2
exit 1

#!/bin/sh
# Container entrypoint for a browser image: runs the agent, which launches and owns headless
# Chromium (embedded mode), as an unprivileged user. Meant to run under an init that reaps
# zombies (tini is PID 1 in deploy/Dockerfile); `exec` hands SIGTERM straight to the agent, which
# ends its streams, stops Chromium and exits 0.
set -eu

app_dir=${APP_DIR:-/opt/browser-telemetry-agent}
run_as=${RUN_AS:-bta}

if [ "$(id -u)" = 0 ]; then
  if ! id "$run_as" >/dev/null 2>&1; then
    echo "entrypoint: user $run_as does not exist (set RUN_AS)" >&2
    exit 2
  fi
  # Drop to the unprivileged user for good (no capabilities kept), then run this script again.
  exec setpriv --reuid="$(id -u "$run_as")" --regid="$(id -g "$run_as")" --init-groups --inh-caps=-all --bounding-set=-all -- "$0" "$@"
fi

# Chromium wants a writable home and temp dir.
if [ -z "${HOME:-}" ] || [ ! -w "${HOME:-/nonexistent}" ]; then
  HOME=$(mktemp -d)
  export HOME
fi
export HOST="${HOST:-0.0.0.0}"
# write_file may write only to the temp dir and the user's home (where a browser's uploads and
# downloads live), unless FS_ALLOW (colon-separated directories) says otherwise.
export FS_ALLOW="${FS_ALLOW:-/tmp:$HOME}"

# One malloc arena and a 4 MiB young generation keep peak RSS ~10 and ~25 MB lower under event
# floods at no measurable CPU cost (npm run bench, README "Performance").
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}"
# Blocks of 64 KiB or more mapped on their own, so a burst's memory goes back to the system
# (docs/operations.md "Catch-up readers under load").
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-65536}"
exec node --max-semi-space-size=4 "$app_dir/dist/main.js" "$@"

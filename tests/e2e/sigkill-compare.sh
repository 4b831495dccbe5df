#!/usr/bin/env bash
# A compare killed with SIGKILL mid-run leaves no process behind (issue 36): its child runs carry
# LOCKSTEP_PARENT_PID and die with it (PR_SET_PDEATHSIG). Without that, a SIGKILLed compare's run
# trains on to its end (seen: SIGTERM was handled, SIGKILL not); on a GPU it would hold the device.
#
# usage: sigkill-compare.sh LOCKSTEP_BINARY SOURCE_DIR
set -euo pipefail
ls_bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Long enough that the runs are alive whenever the kill comes (tiny preset, 100000 steps).
"$ls_bin" compare "$root/configs/baseline.toml" "$root/configs/variants/bf16.toml" --steps 100000 \
  --out "$tmp/cmp" --no-history --force > "$tmp/log" 2>&1 &
pid=$!
children() { grep -l -a "LOCKSTEP_PARENT_PID=$pid" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | sort -u || true; }
for _ in $(seq 1 1200); do
  [ -n "$(children)" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "the compare ended before starting a run:"; cat "$tmp/log"; exit 1; }
  sleep 0.1
done
before=$(children)
[ -n "$before" ] || { echo "no child run started within 120 s"; cat "$tmp/log"; exit 1; }
sleep 1  # let the child get past its start-up into training
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
for _ in $(seq 1 100); do
  if [ -z "$(children)" ]; then
    echo "the compare's runs ($(echo "$before" | tr '\n' ' ')) ended with it"
    exit 0
  fi
  sleep 0.1
done
echo "left behind after 10 s: $(children)"
exit 1

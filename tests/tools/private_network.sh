#!/bin/sh
# private_network.sh PROGRAM [ARGS...]: runs PROGRAM in a private network
# namespace with only loopback up (unshare -rn), so that the ports its ranks
# open are reachable from nowhere else; where this machine allows no such
# namespace, on the host's loopback (saying so), as tests/test_support.cpp does.
if unshare -rn sh -c 'ip link set lo up' >/dev/null 2>&1; then
  exec unshare -rn sh -c 'ip link set lo up && exec "$0" "$@"' "$@"
fi
echo "note: no private network namespace here; using the host's loopback" >&2
exec "$@"

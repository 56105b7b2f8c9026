#!/bin/bash
# Shared by the fault scenarios in tests/faults/: everything in
# tests/integration/lib.sh (clusters, nbdkit, cleanup by PID), plus the
# history recorder and linearizability check below.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

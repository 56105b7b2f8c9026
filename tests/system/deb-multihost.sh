#!/bin/bash
# README's "Deploy on N hosts" from the Debian packages: multihost.sh
# with MH_FROM=deb, which builds them (make deb, into the test's
# directory; BFTBLK_DEBS=DIR uses DIR's instead), installs them with
# apt-get into each host's own overlay of the machine's root, checks
# that no unit is enabled, runs the same deployment, builds the
# library's example against libbftblk-dev, and purges the packages.
set -euo pipefail
MH_FROM=deb
# shellcheck source=tests/system/multihost.sh
. "$(dirname "${BASH_SOURCE[0]}")/multihost.sh"

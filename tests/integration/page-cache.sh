#!/bin/bash
# The page-cache window (server/store/store_pagecache.c), t=1, servers
# with 1 MiB segments and --page-cache-mb 4; server 3 with 0 (no
# window).
#
# 1. 24 MiB written through nbdkit: on servers 0-2, every segment
#    wholly behind the newest 4 MiB of the log (plus 3 MiB for the
#    roll-overs whose thread was still busy) has no page in the page
#    cache (fincore), within 10 s; server 0's metric
#    store_uncached_bytes_total counts at least those; server 3 gave
#    nothing back.
# 2. The 24 MiB read back the same, now from the disk.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
command -v fincore >/dev/null || skip "no fincore (apt-get install util-linux)"
command -v curl >/dev/null || skip "no curl (apt-get install curl)"
[ "$(stat -f -c %T "$TESTDIR")" != tmpfs ] ||
    skip "$TESTDIR is on tmpfs, whose files live in the page cache"
CLUSTER_SIZE=64M
MiB=$((1024 * 1024))
maddr=127.0.0.1:$(_pick_ports 1)
SERVER_ARGS="${SERVER_ARGS:-} --segment-mb 1"
# shellcheck disable=SC2034 # read by server_start
SERVER_ARGS_0="--page-cache-mb 4 --metrics $maddr"
# shellcheck disable=SC2034
SERVER_ARGS_1="--page-cache-mb 4"
# shellcheck disable=SC2034
SERVER_ARGS_2="--page-cache-mb 4"
# shellcheck disable=SC2034
SERVER_ARGS_3="--page-cache-mb 0"
cluster_start 1
nbdkit_start bftblk cache=0

# behind_cached I SLACK_MB: "B R" for server I: the bytes of its
# segments wholly behind the newest 4 + SLACK_MB MiB of its log, and how
# many of them are in the page cache.
behind_cached()
{
	local d=$TESTDIR/data/server-$1
	# shellcheck disable=SC2012 # seg-NNNNNN.log: names sort by number
	ls "$d" | grep '^seg-.*\.log$' | sort -r |
	    while read -r f; do
		fincore -b -n -o RES,SIZE "$d/$f"
	    done | awk -v win=$(((4 + $2) * MiB)) '
		{ if (newer + $2 > win) { b += $2; r += $1 } newer += $2 }
		END { printf "%.0f %.0f\n", b, r }'
}

log "1. 24 MiB written"
PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri bftblk)" -c "
import random
h.pwrite(random.Random(7).randbytes(24 * $MiB), 0)
h.flush()
" || fail "writing 24 MiB"

for i in 0 1 2; do
	t0=$SECONDS
	while :; do
		read -r behind res <<<"$(behind_cached "$i" 3)"
		[ "$res" -eq 0 ] && break
		[ $((SECONDS - t0)) -lt 10 ] ||
		    fail "server $i: $res of the $behind bytes behind its" \
		    "window still cached after 10 s"
		sleep 0.2
	done
	[ "$behind" -ge $((2 * MiB)) ] ||
	    fail "server $i: only $behind bytes of log behind the window"
	log "server $i: $behind bytes behind the window, none cached"
done
read -r behind res <<<"$(behind_cached 3 3)"
[ "$res" -gt 0 ] ||
    fail "server 3 (--page-cache-mb 0) gave back the pages of $behind bytes"

uncached=$(curl -sS -f --max-time 5 "http://$maddr/metrics" |
    awk '$1 == "bftblk_server_store_uncached_bytes_total" { print $2 }')
read -r behind _ <<<"$(behind_cached 0 0)"
[ -n "$uncached" ] && [ "${uncached%.*}" -ge "$((behind - 3 * MiB))" ] ||
    fail "server 0: store_uncached_bytes_total '$uncached', want about $behind"
log "server 0: store_uncached_bytes_total $uncached"

log "2. read back"
PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri bftblk)" -c "
import random
want = random.Random(7).randbytes(24 * $MiB)
assert h.pread(24 * $MiB, 0) == want, 'read back differs'
" || fail "reading the 24 MiB back"
log "ok"

#!/usr/bin/env python3
"""Groups a flat perf profile by what the time is spent on.

Input: `perf report --no-children -g none --sort dso,sym --stdio` output.
Prints each group's share of the samples and its top symbols, so a
profile reads as "hashing 30%, AEAD 25%, ..." (docs/performance.md).
"""
import re
import sys

# First match wins: (group, dso pattern, symbol pattern).
GROUPS = [
    # Debian's libsodium and libcrypto are stripped: their samples show
    # as bare addresses.  In these processes libsodium's time is the
    # BLAKE2b MACs (H is BLAKE3, linked in) and libcrypto's the AEAD, which the
    # BENCH_NOVERIFY and CLUSTER_CHANNEL=plain runs confirm.
    ("H (BLAKE3, built in)", r"", r"^blake3_"),
    ("MACs (libsodium BLAKE2b)", r"libsodium", r""),
    ("AEAD channel (libcrypto)", r"libcrypto", r""),
    ("erasure coding", r"erasurecode|isal|Jerasure|gf_complete|xor_code",
     r""),
    ("erasure coding", r"", r"^ec_encode|^gf_|^xor_|isal"),
    ("memcpy/memmove/memset", r"libc", r"mem(cpy|move|set)"),
    ("malloc/free", r"libc", r"malloc|free|_int_|realloc|calloc|tcache"),
    ("msgpack", r"msgpack", r""),
    ("libuv", r"libuv", r""),
    ("kernel: copy to/from user", r"kernel",
     r"copy_user|copy_to_user|copy_from_user|rep_movs|_copy_to_iter|"
     r"_copy_from_iter|copy_page"),
    # Before sockets: "finish_task_switch" would match "sk_".
    ("kernel: scheduler/wakeups/futex", r"kernel",
     r"sched|schedule|wake|futex|finish_task|switch|idle|ttwu|"
     r"enqueue|dequeue|pick_next|update_curr|hrtimer|tick"),
    ("kernel: TCP/unix sockets", r"kernel",
     r"tcp|skb|sock|inet|ip_|__ip|net_|netif|napi|loopback|unix_|"
     r"dev_|sk_|__dev|nf_|ipt_|fib"),
    ("kernel: files/page cache (store)", r"kernel",
     r"ext4|xfs|btrfs|filemap|folio|page_cache|generic_perform|"
     r"iomap|jbd2|pagecache|vfs_write|shmem|mark_buffer"),
    ("kernel: syscall entry/epoll/other", r"kernel", r""),
    ("bftblk code", r"bftblk", r""),
    ("nbdkit", r"nbdkit$|^nbdkit", r""),
    ("other libc", r"libc", r""),
]

LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$")


def group_of(dso, sym):
    for name, dpat, spat in GROUPS:
        if dpat and not re.search(dpat, dso):
            continue
        if spat and not re.search(spat, sym, re.I):
            continue
        if not dpat and not spat:
            continue
        return name
    return "other (%s)" % dso


def main(path):
    totals, syms = {}, {}
    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        pct, dso, _, sym = float(m.group(1)), m.group(2), m.group(3), \
            m.group(4)
        g = group_of(dso, sym)
        totals[g] = totals.get(g, 0.0) + pct
        syms.setdefault(g, []).append((pct, sym))
    for g, pct in sorted(totals.items(), key=lambda x: -x[1]):
        if pct < 0.5:
            continue
        top = sorted(syms[g], reverse=True)[:3]
        print("  %5.1f%%  %-34s %s" % (pct, g, ", ".join(
            "%s %.1f" % (s[:32], p) for p, s in top)))


if __name__ == "__main__":
    main(sys.argv[1])

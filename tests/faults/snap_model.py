#!/usr/bin/python3
"""The model and the driver of tests/faults/snap-model.sh.

The model is what every volume head and every snapshot must read as:
one bytearray each, plus which snapshot each clone (and each snapshot
of a clone) names as its parent.  It is kept in a pickle between
invocations, since the script restarts servers and nbdkit between them.

  snap_model.py init STATE BLOCKS      volume v, all zeros (made by the
                                       script), as the model's start
  snap_model.py step STATE SEED TAG    one random operation, done on the
                                       cluster and in the model, then
                                       every head and snapshot checked;
                                       exit 3 (model untouched) when it
                                       drew a rollback: the script stops
                                       nbdkit and runs `rollback`
  snap_model.py rollback STATE SEED TAG   that rollback, then the check

Environment: ADMIN, CLUSTER_DIR, TESTDIR, SOCK (nbdkit's unix socket,
exports by name), ADMIN_TIMEOUT (the admin tool's --timeout).
"""
import json
import os
import pickle
import random
import re
import subprocess
import sys
import time

BS = 65536
PIECE = 4096
MAX_SNAPS = 5		# live snapshots at once: each is exported every step
MAX_CLONES = 3

ADMIN = os.environ["ADMIN"]
DIR = os.environ["CLUSTER_DIR"]
TESTDIR = os.environ["TESTDIR"]
SOCK = os.environ.get("SOCK", "")
TIMEOUT = os.environ.get("ADMIN_TIMEOUT", "2")
# Set while a liar withholds or refuses its replies (mute, slow, refuse):
# clones and rollbacks, which need every server's answer, may then be
# refused, for that reason only.
WITHHOLDS = os.environ.get("WITHHOLDS") == "1"


class Failed(Exception):
    pass


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def save(path, m):
    with open(path + ".new", "wb") as f:
        pickle.dump(m, f)
    os.replace(path + ".new", path)


def admin(*args, expect_ok=True, timeout=TIMEOUT, stdout_only=False):
    """Runs the admin tool; returns (status, stdout+stderr), or with
    stdout_only (for --json) just stdout as the second."""
    words = 1 if args[0] == "export" else 2	# export NAME FILE
    cmd = [ADMIN] + list(args[:words]) + ["--dir", DIR, "--timeout",
                                          timeout] + list(args[words:])
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    with open(os.path.join(TESTDIR, "log", "admin.log"), "a") as f:
        f.write("$ %s\n%s(status %d, %.1f s)\n" % (
            " ".join(cmd), out, r.returncode, time.monotonic() - t0))
    if expect_ok and r.returncode != 0:
        raise Failed("`bftblk %s` failed: %s" % (" ".join(args), out.strip()))
    return r.returncode, r.stdout if stdout_only else out


def nbd_do(vol, fn):
    """Runs fn(h) on a fresh connection to export vol, then flushes and
    closes it, so that the volume's lease goes with the connection."""
    import nbd
    h = nbd.NBD()
    try:
        h.connect_uri("nbd+unix:///%s?socket=%s" % (vol, SOCK))
        fn(h)
        h.flush()
        h.shutdown()
    finally:
        del h


def dependants(m, vol, snap):
    """Every clone and every snapshot naming vol@snap as its parent, as
    the refusal of its delete names them."""
    out = {c for c, p in m["parent"].items() if p == (vol, snap)}
    out |= {"%s@%s" % k for k, p in m["snap_parent"].items()
            if p == (vol, snap)}
    return out


def describe(m, data, blk, name):
    """A block's bytes: zeros, the same block of another image of the
    model (so a mix-up says with what), or their first bytes."""
    if data == bytes(BS):
        return "zeros"
    imgs = sorted(m["vol"].items())
    imgs += [("%s@%s" % k, img) for k, img in sorted(m["snap"].items())]
    for other, img in imgs:
        if other != name and img[blk * BS:(blk + 1) * BS] == data:
            return "what %s holds there" % other
    return "%s... (no other image of the model holds that there)" % (
        data[:8].hex())


def check(m, tag):
    """Every head and every snapshot exported and compared with the
    model, and the table listing exactly the model's names."""
    items = [(v, img) for v, img in sorted(m["vol"].items())]
    items += [("%s@%s" % k, img) for k, img in sorted(m["snap"].items())]
    got_path = os.path.join(TESTDIR, "got.img")
    for name, want in items:
        if os.path.exists(got_path):
            os.unlink(got_path)
        admin("export", name, got_path)
        with open(got_path, "rb") as f:
            got = f.read()
        if got == want:
            continue
        if len(got) != len(want):
            raise Failed("%s: %s is %d bytes, the model %d"
                         % (tag, name, len(got), len(want)))
        bad = [b for b in range(len(want) // BS)
               if got[b * BS:(b + 1) * BS] != want[b * BS:(b + 1) * BS]]
        b = bad[0]
        g, w = got[b * BS:(b + 1) * BS], want[b * BS:(b + 1) * BS]
        off = next(i for i in range(BS) if g[i] != w[i])
        raise Failed("%s: %s differs from the model in %d blocks, first "
                     "block %d (byte %d of it): read %s, the model says %s"
                     % (tag, name, len(bad), b, off, describe(m, g, b, name),
                        describe(m, w, b, name)))
    # Deletes still to be forgotten by a server (a mute one) are listed
    # as deleting: they are gone for the model.
    # The lists ask every server what it holds, so a mute one costs
    # each list its --timeout: a short one.
    listed = json.loads(admin("volume", "list", "--json", timeout="1",
                              stdout_only=True)[1])["volumes"]
    names = {x["name"] for x in listed if x["state"] == "live"}
    if names != set(m["vol"]):
        raise Failed("%s: the table lists volumes %s, the model %s"
                     % (tag, sorted(names), sorted(m["vol"])))
    listed = json.loads(admin("snap", "list", "--json", timeout="1",
                            stdout_only=True)[1])
    snaps = {(x["volume"], x["name"]) for x in listed if not x["deleting"]}
    if snaps != set(m["snap"]):
        raise Failed("%s: the table lists snapshots %s, the model %s"
                     % (tag, sorted(snaps), sorted(m["snap"])))
    print("%s: %d heads and %d snapshots read as the model"
          % (tag, len(m["vol"]), len(m["snap"])), file=sys.stderr)


def pattern(r, n):
    # Never all zeros, so a lost write cannot pass for a trim.
    d = bytearray(r.randbytes(n))
    d[0] |= 1
    return bytes(d)


def op_write(m, r, vol):
    nb = m["blocks"]
    img = m["vol"][vol]
    if r.random() < 0.5:
        b, k = r.randrange(nb), r.randint(1, 3)
        k = min(k, nb - b)
        writes = [(b * BS, pattern(r, k * BS))]
        what = "write of blocks %d-%d" % (b, b + k - 1)
    else:
        writes = []
        for _ in range(r.randint(1, 4)):
            b, p = r.randrange(nb), r.randrange(BS // PIECE)
            writes.append((b * BS + p * PIECE, pattern(r, PIECE)))
        what = "4 KiB writes at %s" % ", ".join(
            "%d+%d" % (o // BS, o % BS) for o, _ in writes)

    def go(h):
        for o, d in writes:
            h.pwrite(d, o)
    nbd_do(vol, go)
    for o, d in writes:
        img[o:o + len(d)] = d
    return "%s: %s" % (vol, what)


def op_zero(m, r, vol):
    nb = m["blocks"]
    b = r.randrange(nb)
    k = min(r.randint(1, 4), nb - b)
    how = r.choice(["trim", "zero"])

    def go(h):
        (h.trim if how == "trim" else h.zero)(k * BS, b * BS)
    nbd_do(vol, go)
    m["vol"][vol][b * BS:(b + k) * BS] = bytes(k * BS)
    return "%s: %s of blocks %d-%d" % (vol, how, b, b + k - 1)


def new_name(m, prefix):
    m["seq"] += 1
    return "%s%d" % (prefix, m["seq"])


def op_snap(m, r, vol):
    s = new_name(m, "s")
    admin("snap", "create", "--volume", vol, "--name", s)
    m["snap"][(vol, s)] = bytearray(m["vol"][vol])
    m["snap_parent"][(vol, s)] = m["parent"].get(vol)
    return "snap create %s@%s" % (vol, s)


def op_snap_delete(m, r, key):
    vol, s = key
    want = dependants(m, vol, s)
    st, out = admin("snap", "delete", "--volume", vol, "--name", s,
                    expect_ok=not want)
    if not want:
        del m["snap"][key]
        del m["snap_parent"][key]
        return "snap delete %s@%s" % key
    if st == 0:
        raise Failed("snap delete %s@%s succeeded, but %s depend on it"
                     % (vol, s, ", ".join(sorted(want))))
    g = re.search(r"is the parent of (.*): delete or flatten", out)
    named = set(g.group(1).split(", ")) if g else set()
    if named != want:
        raise Failed("snap delete %s@%s was refused naming %s, but its "
                     "dependants are %s: %s" % (vol, s, sorted(named),
                                                sorted(want), out.strip()))
    return "snap delete %s@%s refused, naming %s" % (
        vol, s, ", ".join(sorted(want)))


def op_clone(m, r, key):
    c = new_name(m, "c")
    st, out = admin("volume", "clone", "--from", "%s@%s" % key, "--name", c,
                    expect_ok=not WITHHOLDS)
    if st != 0:
        # Clone entries are written only once every server says it is
        # finalized: a server that does not answer holds clones back.
        if "cannot tell whether the cluster is finalized" not in out:
            raise Failed("volume clone %s@%s as %s failed: %s"
                         % (key + (c, out.strip())))
        return "volume clone %s@%s as %s refused: %s" % (
            key + (c, out.strip().split("bftblk: ")[-1]))
    m["vol"][c] = bytearray(m["snap"][key])
    m["parent"][c] = key
    return "volume clone %s@%s as %s" % (key + (c,))


def op_flatten(m, r, c):
    admin("volume", "flatten", "--name", c)
    _, info = admin("volume", "info", "--name", c)
    if re.search(r"^parent:", info, re.M):
        raise Failed("%s still shows a parent after flatten: %s" % (c, info))
    p = m["parent"].pop(c)
    return "volume flatten %s (was a clone of %s@%s)" % ((c,) + p)


def op_delete(m, r, c):
    own = sorted(s for v, s in m["snap"] if v == c)
    st, out = admin("volume", "delete", "--name", c, expect_ok=not own)
    if own:
        if st == 0:
            raise Failed("volume delete %s succeeded with snapshots %s"
                         % (c, own))
        if "has snapshots" not in out:
            raise Failed("volume delete %s was refused but not for its "
                         "snapshots: %s" % (c, out.strip()))
        return "volume delete %s refused: it has snapshots" % c
    del m["vol"][c]
    m["parent"].pop(c, None)
    return "volume delete %s" % c


def op_rollback(m, key):
    vol, s = key
    st, out = admin("snap", "rollback", "--volume", vol, "--name", s,
                    expect_ok=not WITHHOLDS)
    if st != 0:
        # What to write back is the union of every server's list of
        # changes: a server that does not answer holds rollback back,
        # and then nothing may have changed.
        if "needs every server's answer" not in out:
            raise Failed("snap rollback %s@%s failed: %s"
                         % (vol, s, out.strip()))
        return "snap rollback %s@%s refused: %s" % (
            vol, s, out.strip().split("bftblk: ")[-1])
    m["vol"][vol] = bytearray(m["snap"][key])
    # The head's parent does not change: what the snapshot's unwritten
    # blocks read is written into the head's own registers.
    return "snap rollback %s@%s" % key


def choose(m, r):
    """(weight, name, argument) of every operation possible now; one is
    drawn.  Table changes are kept rarer than writes: each waits out the
    admin lock."""
    vols = sorted(m["vol"])
    clones = sorted(c for c in vols if c != "v")
    snaps = sorted(m["snap"])
    flat = sorted(c for c in clones if c in m["parent"])
    ops = [(5, "write", r.choice(vols)), (1.5, "zero", r.choice(vols))]
    if len(snaps) < MAX_SNAPS:
        ops.append((1.5, "snap", r.choice(vols)))
    if snaps:
        ops.append((1, "snap_delete", r.choice(snaps)))
        ops.append((0.8, "rollback", r.choice(snaps)))
        if len(clones) < MAX_CLONES:
            ops.append((1.2, "clone", r.choice(snaps)))
    if flat:
        ops.append((0.7, "flatten", r.choice(flat)))
    if clones:
        ops.append((0.5, "delete", r.choice(clones)))
    x = r.uniform(0, sum(w for w, _, _ in ops))
    for w, name, arg in ops:
        x -= w
        if x <= 0:
            return name, arg
    return ops[-1][1:]


def main():
    cmd, state = sys.argv[1], sys.argv[2]
    if cmd == "init":
        blocks = int(sys.argv[3])
        save(state, {"blocks": blocks, "seq": 0,
                     "vol": {"v": bytearray(blocks * BS)},
                     "parent": {}, "snap": {}, "snap_parent": {}})
        return 0
    seed, tag = sys.argv[3], sys.argv[4]
    m = load(state)
    r = random.Random("%s-%s" % (seed, tag))
    name, arg = choose(m, r)
    try:
        if cmd == "step":
            if name == "rollback":
                print("%s@%s" % arg)
                return 3
            what = globals()["op_" + name](m, r, arg)
        elif cmd == "rollback":
            if name != "rollback":
                raise Failed("rollback: the step drew %s" % name)
            what = op_rollback(m, arg)
        else:
            raise Failed("unknown command %s" % cmd)
        print("%s: %s" % (tag, what), file=sys.stderr)
        save(state, m)
        check(m, "%s (after %s)" % (tag, what))
    except Failed as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

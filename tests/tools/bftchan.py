"""The client side of bftblk's channel handshake in pure Python.

For tests that send hand-made frames to a server (tests/integration/
malformed.sh, limits.sh): they must get through the handshake of
common/channel.h first.  Only the handshake is here: under channel =
plain that is all a client needs, frames then go out as they are; under
channel = aead a test can still reach every handshake outcome (accepted,
refused with a status, a bad finish) but not send frames.

X25519 follows RFC 7748; BLAKE2b comes from hashlib.  libsodium's
crypto_generichash(out, outlen, in, key) is blake2b(digest_size=outlen,
key=key) and crypto_kdf_derive_from_key(sub, 32, id, ctx, key) is
blake2b(key=key, digest_size=32, salt=LE64(id) + 8 zero bytes,
person=ctx + 8 zero bytes) of nothing.

No third-party module is needed.
"""
import hashlib
import os
import socket

CHELLO_LEN = 88
SHELLO_LEN = 56
FINISH_LEN = 16
VERSION = 4                     # BFT_CHAN_VERSION in common/channel.h
MODES = {'aead': 0, 'plain': 1}
CIPHERS = 1 | 2                 # ChaCha20-Poly1305, AES-256-GCM
STATUS = {0: 'accepted', 1: 'unknown client', 2: 'wrong cluster',
          3: 'wrong mode', 4: 'no cipher', 5: 'too many connections',
          6: 'malformed client hello'}

P = 2 ** 255 - 19
A24 = 121665


def _clamp(k):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    return int.from_bytes(bytes(k), 'little')


def x25519(k, u):
    """RFC 7748 section 5: the scalar k (32 bytes) times the point u."""
    k = _clamp(k)
    x1 = int.from_bytes(u, 'little') & ((1 << 255) - 1)
    x2, z2, x3, z3, swap = 1, 0, x1, 1, 0
    for t in reversed(range(255)):
        kt = (k >> t) & 1
        swap ^= kt
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = kt
        a = (x2 + z2) % P
        aa = a * a % P
        b = (x2 - z2) % P
        bb = b * b % P
        e = (aa - bb) % P
        c = (x3 + z3) % P
        d = (x3 - z3) % P
        da = d * a % P
        cb = c * b % P
        x3 = (da + cb) ** 2 % P
        z3 = x1 * (da - cb) ** 2 % P
        x2 = aa * bb % P
        z2 = e * (aa + A24 * e) % P
    if swap:
        x2, x3, z2, z3 = x3, x2, z3, z2
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, 'little')


BASE = (9).to_bytes(32, 'little')


def public_key(sk):
    return x25519(sk, BASE)


def keypair():
    sk = os.urandom(32)
    return sk, public_key(sk)


def kdf(key, subkey_id, ctx=b'bftchan1'):
    return hashlib.blake2b(b'', key=key, digest_size=32,
                           salt=subkey_id.to_bytes(8, 'little') + bytes(8),
                           person=ctx + bytes(8)).digest()


def tag(key, data):
    return hashlib.blake2b(data, key=key, digest_size=16).digest()


def read_kv(path):
    """The "key = value" lines of bftblk.conf or a key file."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if '=' in line:
                k, v = line.split('=', 1)
                out[k.strip()] = v.strip()
    return out


class Cluster:
    """What a client needs of bftblk.conf."""

    def __init__(self, conf_path):
        kv = read_kv(conf_path)
        self.cluster_id = bytes.fromhex(kv['cluster-id'])
        self.mode = MODES[kv.get('channel', 'aead')]
        self.t = int(kv['t'])
        self.n = 3 * self.t + 1
        self.server_pk = [bytes.fromhex(kv['server.%d.pk' % i])
                          for i in range(self.n)]
        self.servers = []
        for i in range(self.n):
            host, port = kv['server.%d' % i].rsplit(':', 1)
            self.servers.append((host, int(port)))


def client_sk(key_path):
    """The channel secret of a client key file."""
    return bytes.fromhex(read_kv(key_path)['chan-key'])


def fingerprint(pk):
    return pk[:8].hex()


def client_hello(cl, index, sk, eph_pk, cluster_id=None, mode=None,
                 version=VERSION, ciphers=CIPHERS):
    return (b'BFTC' + bytes([version, cl.mode if mode is None else mode,
                             ciphers, index]) +
            (cl.cluster_id if cluster_id is None else cluster_id) +
            public_key(sk) + eph_pk)


def recv_exact(s, k):
    buf = b''
    while len(buf) < k:
        chunk = s.recv(k - len(buf))
        if not chunk:
            raise ConnectionError('connection closed after %d of %d bytes'
                                  % (len(buf), k))
        buf += chunk
    return buf


class Refused(Exception):
    def __init__(self, status):
        super().__init__('server refused: status %d (%s)'
                         % (status, STATUS.get(status, '?')))
        self.status = status


def handshake(s, cl, index, sk, bad_finish=False, **hello_args):
    """Runs the handshake on socket s with server index under the static
    secret sk.  Returns the server hello; raises Refused with the status
    the server sent, or AssertionError when the server's confirmation
    tag is wrong.  bad_finish sends a finish tag with one bit flipped.
    hello_args go to client_hello (cluster_id, mode, ...)."""
    eph_sk, eph_pk = keypair()
    ch = client_hello(cl, index, sk, eph_pk, **hello_args)
    s.sendall(ch)
    sh = recv_exact(s, SHELLO_LEN)
    if sh[:4] != b'BFTS' or sh[4] != VERSION:
        raise AssertionError('not a server hello: %s' % sh.hex())
    if sh[5] != 0:
        raise Refused(sh[5])
    server_eph = sh[8:40]
    spk = cl.server_pk[index]
    dh = (x25519(sk, spk) + x25519(eph_sk, spk) + x25519(sk, server_eph) +
          x25519(eph_sk, server_eph))
    root = hashlib.blake2b(b'bftblk channel v1' + dh + ch + sh[:40],
                           digest_size=32).digest()
    confirm, finish = kdf(root, 3), kdf(root, 4)
    if tag(confirm, sh[:40]) != sh[40:]:
        raise AssertionError('the server failed to prove its key')
    fin = bytearray(tag(finish, sh))
    if bad_finish:
        fin[5] ^= 0x01
    s.sendall(bytes(fin))
    return sh


def connect(cl, index, timeout=10):
    s = socket.create_connection(cl.servers[index], timeout=timeout)
    s.settimeout(timeout)
    return s

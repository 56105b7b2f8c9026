/*
 * Protocol constants and value types shared by client and server.
 *
 * One 64 KiB block of the disk is one M-PoWerStore register (Dobre et
 * al., Algorithms 4-6).  A timestamp is (num, wid, MAC_kW(num || wid)):
 * the MAC lets a writer refuse fabricated timestamps in CLOCK, which is
 * what makes timestamps non-skipping.
 */
#ifndef BFTBLK_PROTO_H
#define BFTBLK_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define BFT_BLOCK_SIZE   65536u
#define BFT_MAX_T        5
#define BFT_MAX_N        (3 * BFT_MAX_T + 1)
#define BFT_HASH_LEN     32	/* BLAKE3-256: fragments, nonces */
#define BFT_MAC_LEN      16	/* keyed BLAKE2b-128: metadata only */
#define BFT_NONCE_LEN    32
#define BFT_KEY_LEN      32
#define BFT_CLUSTER_ID_LEN 16
/* A frame carries at most one fragment plus metadata for n servers. */
#define BFT_MAX_FRAME    (1u << 20)
/* Upper bound of an erasure-coded fragment (block / k plus headers). */
#define BFT_MAX_FRAG     (BFT_BLOCK_SIZE + 4096u)

struct bft_ts {
	uint64_t num;
	uint64_t wid;		/* writer id, never 0 for a real write */
	uint8_t mac[BFT_MAC_LEN];
};

/* A candidate (ts, N, vec): what lc holds and what readers write back. */
struct bft_cand {
	struct bft_ts ts;
	uint8_t nonce[BFT_NONCE_LEN];
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
};

/*
 * What a server keeps of one STORE besides the fragment itself:
 * Hist[ts] = (fr, cc, H(N), vec).
 */
struct bft_hist_meta {
	struct bft_ts ts;
	uint8_t nh[BFT_HASH_LEN];
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	uint32_t frag_len;
};

/*
 * A register's address, what the wire and the store call its block: the
 * volume id in the top 24 bits and the block within the volume in the
 * low 40 (64 PiB of 64 KiB blocks).  Volume 0 is the disk a cluster
 * serves by default, so its addresses are its block numbers, as before
 * volumes.  The MACs name the volume and the block separately
 * (crypto.h), so no genuine write of one volume's block passes as
 * another's.
 */
#define BFT_ADDR_BLOCK_BITS	40
#define BFT_ADDR_MAX_VOL	((1u << (64 - BFT_ADDR_BLOCK_BITS)) - 1)
#define BFT_ADDR_MAX_BLOCK	((UINT64_C(1) << BFT_ADDR_BLOCK_BITS) - 1)

static inline uint64_t
bft_addr(uint32_t vol, uint64_t block)
{
	return (uint64_t)vol << BFT_ADDR_BLOCK_BITS | (block & BFT_ADDR_MAX_BLOCK);
}

static inline uint32_t
bft_addr_vol(uint64_t addr)
{
	return (uint32_t)(addr >> BFT_ADDR_BLOCK_BITS);
}

static inline uint64_t
bft_addr_block(uint64_t addr)
{
	return addr & BFT_ADDR_MAX_BLOCK;
}

/* Reserved: block N of it is volume N's writer lease (lib/lease.c). */
#define BFT_VOL_LEASES		BFT_ADDR_MAX_VOL
/* Reserved: the volume table's registers (lib/voltab.c). */
#define BFT_VOL_TABLE (BFT_ADDR_MAX_VOL - 1)

/*
 * Volume 0's size is the cluster's (bftblk.conf, HELLO); another
 * volume's is in the volume table, which servers do not read.  They
 * hold any block of another volume below BFT_VOL_MAX_BLOCKS (just under
 * 256 TiB of 64 KiB blocks), which keeps SUMMARY's 32-bit counts and a
 * volume's page table finite.
 */
#define BFT_VOL_MAX_BLOCKS	((UINT64_C(1) << 32) - (UINT64_C(1) << 16))

static inline uint64_t
bft_vol_limit(uint32_t vol, uint64_t nblocks0)
{
	return vol == 0 ? nblocks0 : BFT_VOL_MAX_BLOCKS;
}

/* Whether a server may hold addr, given volume 0's size. */
static inline bool
bft_addr_ok(uint64_t addr, uint64_t nblocks0)
{
	return bft_addr_block(addr) < bft_vol_limit(bft_addr_vol(addr),
	    nblocks0);
}

/*
 * Lease generations (lib/lease.c, common/predicates.h's bft_fenced):
 * every acquisition of a volume's lease starts a generation, and each
 * write of the holder, to the volume and to its lease register, carries
 * it in the top bits of its timestamp's num.  A newer holder's writes
 * therefore order after every write of an older one, and a server can
 * tell from a STORE alone which holder sent it.  40 bits leave 2^40
 * writes of one block under one generation; data written before
 * generations existed is generation 0.
 */
#define BFT_GEN_SHIFT	40
#define BFT_GEN_MAX	((UINT64_C(1) << (64 - BFT_GEN_SHIFT)) - 1)

static inline uint64_t
bft_ts_gen(const struct bft_ts *ts)
{
	return ts->num >> BFT_GEN_SHIFT;
}

/* The lowest num a write of generation gen may carry. */
static inline uint64_t
bft_gen_floor(uint64_t gen)
{
	return gen << BFT_GEN_SHIFT;
}

/*
 * The lease register that fences writes to addr: its volume's, and for
 * a lease register itself, that register.
 */
static inline uint64_t
bft_fence_addr(uint64_t addr)
{
	uint32_t vol = bft_addr_vol(addr);

	return vol == BFT_VOL_LEASES ? addr : bft_addr(BFT_VOL_LEASES, vol);
}

/* Orders by (num, wid); the MAC takes no part in the order. */
int bft_ts_cmp(const struct bft_ts *a, const struct bft_ts *b);
bool bft_ts_is_zero(const struct bft_ts *ts);

/* Reply status codes, carried on the wire. */
enum bft_status {
	BFT_OK = 0,
	BFT_EPROTO = 1,		/* malformed or unexpected request */
	BFT_EAUTH = 2,		/* a MAC did not verify */
	BFT_ERANGE = 3,		/* block number beyond the disk */
	BFT_EBUSY = 4,		/* too many pending STOREs for this block */
	BFT_ENOSPC = 5,		/* the server's disk is full */
	BFT_EIO = 6,		/* the server's disk failed */
	BFT_ECLUSTER = 7,	/* HELLO names another cluster or geometry */
	BFT_ESTALE = 8,		/* STORE for a timestamp already completed */
	BFT_EPERM = 9,		/* the client's role does not allow this */
	BFT_EAGAIN = 10,	/* a new server has not rebuilt this block yet */
	BFT_EFENCED = 11,	/* the volume's lease moved to a newer holder */
	BFT_EGONE = 12,		/* the block's volume was deleted */
};

const char *bft_status_str(int status);

#endif

/*
 * The index checkpoint's file (store_ckpt.c writes it, store_ckload.c
 * loads it): its name, version and the structs it is made of, in the
 * order the file holds them.
 */
#ifndef BFTBLK_STORE_CKPT_H
#define BFTBLK_STORE_CKPT_H

#include <stdint.h>

#include "store_int.h"

#define CKPT_FILE	"index.ckpt"
#define CKPT_TMP	"index.ckpt.tmp"
#define CKPT_MAGIC	"BFTIDX1"
/*
 * 4: the snapshot boundaries and retained records.  3: the dropped
 * volumes.  2: pages.  An older file is refused: the whole log is
 * replayed, and it finds every DROP, SNAP and UNSNAP record.
 */
#define CKPT_VERSION	4u

struct ck_hdr {
	char magic[8];
	uint32_t version;
	uint32_t idx_size, side_size;	/* the structs' sizes: same build */
	uint32_t n, server_index;
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	uint64_t nblocks;
	uint64_t next_seq;
	uint64_t held;
	uint32_t pos_no;		/* the log after (pos_no, pos_off) */
	uint32_t nseg;
	uint64_t pos_off;
	uint64_t nside;
	uint64_t npages;		/* pages that follow the segments */
	uint64_t ndropped;		/* volume ids after the side entries */
	uint64_t nsnaps;		/* boundaries after the volume ids */
	uint64_t nret;			/* retained records after those */
	uint32_t ret_size;		/* struct ret_rec's: same build */
	uint32_t pad;
};

/* A boundary, and a retained record, as the file holds them. */
struct ck_snap {
	uint32_t vol;
	uint32_t pad;
	struct snap_gen g;
};

struct ck_ret {
	uint64_t addr;
	struct ret_rec r;
};

struct ck_seg {
	uint32_t no;
	uint32_t drops;			/* zero in a format 5 directory's */
	uint64_t size, live;
	uint64_t first_seq;		/* tells a segment from a namesake */
};

#endif

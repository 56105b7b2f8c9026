/* Timestamp order and status names. */
#include "proto.h"

int
bft_ts_cmp(const struct bft_ts *a, const struct bft_ts *b)
{
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->wid != b->wid)
		return a->wid < b->wid ? -1 : 1;
	return 0;
}

bool
bft_ts_is_zero(const struct bft_ts *ts)
{
	return ts->num == 0 && ts->wid == 0;
}

const char *
bft_status_str(int status)
{
	switch (status) {
	case BFT_OK:		return "ok";
	case BFT_EPROTO:	return "malformed or unexpected request";
	case BFT_EAUTH:		return "MAC did not verify";
	case BFT_ERANGE:	return "block out of range";
	case BFT_EBUSY:		return "too many pending writes for this block";
	case BFT_ENOSPC:	return "server disk full";
	case BFT_EIO:		return "server disk I/O error";
	case BFT_ECLUSTER:	return "cluster identity or geometry mismatch";
	case BFT_ESTALE:	return "timestamp already completed with other data";
	case BFT_EPERM:		return "not permitted for this client's role";
	case BFT_EAGAIN:	return "not rebuilt yet on this new server";
	case BFT_EFENCED:	return "fenced: the volume's lease was taken "
				    "by a newer holder";
	case BFT_EGONE:		return "volume deleted";
	default:		return "unknown status";
	}
}

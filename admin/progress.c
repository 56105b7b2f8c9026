/* Progress lines of long admin tasks (progress.h). */
#include <inttypes.h>
#include <time.h>

#include "log.h"
#include "progress.h"

double
admin_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void
admin_progress_start(struct admin_progress *p, const char *what,
    const char *unit, uint64_t per_unit)
{
	p->what = what;
	p->unit = unit;
	p->per_unit = per_unit ? per_unit : 1;
	p->t0 = admin_now_s();
	p->last = 0;
}

void
admin_progress(struct admin_progress *p, uint64_t done, uint64_t total,
    bool end)
{
	double t = admin_now_s(), rate;

	if (!end && t - p->last < 1.0)
		return;
	p->last = t;
	rate = t > p->t0 ? (double)done / (t - p->t0) : 0;
	bft_log("%s: %" PRIu64 "/%" PRIu64 " %s (%.0f%%), %.1f %s/s, %s %.0f s",
	    p->what, done / p->per_unit, total / p->per_unit, p->unit,
	    total ? 100.0 * (double)done / (double)total : 100.0,
	    rate / (double)p->per_unit, p->unit, end ? "took" : "ETA",
	    end ? t - p->t0 : rate > 0 ? (double)(total - done) / rate : 0);
}

void
admin_progress_fn(void *opaque, uint64_t done, uint64_t total)
{
	admin_progress(opaque, done, total, done == total);
}

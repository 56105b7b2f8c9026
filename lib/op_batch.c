/*
 * The wait of a caller's thread for the ops it submitted, and the
 * loop's word that each is done (struct op_batch, engine_int.h).
 */
#include <stdint.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine_int.h"

void
bftblk__batch_init(struct op_batch *b, unsigned pending)
{
	__atomic_store_n(&b->pending, pending, __ATOMIC_RELAXED);
}

static long
futex(uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

/*
 * Sleeps until the count is zero (the sleeping bit may stay set).  The
 * bit is set before each sleep, so the loop's last decrement either sees
 * it and wakes this thread, or lands first and FUTEX_WAIT returns at
 * once on a changed word.  The acquire load pairs with the loop's
 * release: what the ops wrote is visible once the count reads zero.
 */
void
bftblk__batch_wait(struct op_batch *b)
{
	uint32_t v = __atomic_load_n(&b->pending, __ATOMIC_ACQUIRE);

	while (bftblk__batch_left(v) != 0) {
		if (!(v & BATCH_SLEEPING) &&
		    !__atomic_compare_exchange_n(&b->pending, &v,
		    v | BATCH_SLEEPING, false, __ATOMIC_ACQUIRE,
		    __ATOMIC_ACQUIRE))
			continue;	/* v reloaded: an op finished */
		(void)futex(&b->pending, FUTEX_WAIT_PRIVATE, v | BATCH_SLEEPING);
		v = __atomic_load_n(&b->pending, __ATOMIC_ACQUIRE);
	}
}

/*
 * The loop's side: one op of the batch is done.  After the decrement
 * that reaches zero the waiter may return and its stack frame go, so b
 * is touched only by the wake call, which at worst wakes another futex
 * at that address spuriously; every futex waiter rechecks its word.
 */
void
bftblk__batch_done(struct op_batch *b)
{
	uint32_t v = __atomic_sub_fetch(&b->pending, 1, __ATOMIC_RELEASE);

	if (v == BATCH_SLEEPING)
		(void)futex(&b->pending, FUTEX_WAKE_PRIVATE, 1);
}

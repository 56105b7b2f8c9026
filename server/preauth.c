/*
 * The pool of connections that have not proven a key (preauth.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "net_int.h"
#include "preauth.h"

void
bft_preauth_init(struct bft_preauth *pa, unsigned max, unsigned max_per_addr)
{
	memset(pa, 0, sizeof *pa);
	pa->max = max ? max : BFT_DEFAULT_MAX_PREAUTH;
	pa->max_per_addr = max_per_addr ? max_per_addr :
	    BFT_DEFAULT_MAX_PREAUTH_PER_ADDR;
}

/* Counts one event of addr among the busiest sources (Misra-Gries). */
static void
count_source(struct bft_preauth *pa, const char *addr)
{
	struct bft_preauth_src *free_slot = NULL;
	unsigned i;

	for (i = 0; i < BFT_PREAUTH_TOP; i++) {
		if (pa->top[i].n == 0) {
			if (free_slot == NULL)
				free_slot = &pa->top[i];
		} else if (strcmp(pa->top[i].addr, addr) == 0) {
			pa->top[i].n++;
			return;
		}
	}
	if (free_slot != NULL) {
		snprintf(free_slot->addr, sizeof free_slot->addr, "%s", addr);
		free_slot->n = 1;
		return;
	}
	/* Every slot taken by another: each loses one, as this one would. */
	for (i = 0; i < BFT_PREAUTH_TOP; i++)
		pa->top[i].n--;
}

void
bft_preauth_note(struct bft_net *net, const char *addr,
    enum bft_preauth_event ev, const char *fmt, ...)
{
	struct bft_preauth *pa = &net->pa;
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	pa->n[ev]++;
	pa->total[ev]++;
	count_source(pa, addr ? addr : "?");
	if (pa->busy) {
		bft_debug("%s", line);
		return;
	}
	/* The first after a quiet interval says what is going on. */
	pa->busy = true;
	pa->since_ms = uv_now(net->loop);
	pa->told = 1;
	bft_log("%s", line);
}

/* The summary of the interval since pa->since_ms; restarts the counts. */
static void
summarize(struct bft_net *net, uint64_t now)
{
	struct bft_preauth *pa = &net->pa;
	const struct bft_preauth_src *top = NULL;
	char src[BFT_PREAUTH_ADDR_LEN + 48] = "";
	unsigned i;

	for (i = 0; i < BFT_PREAUTH_TOP; i++)
		if (pa->top[i].n > 0 && (top == NULL || pa->top[i].n > top->n))
			top = &pa->top[i];
	if (top != NULL)
		snprintf(src, sizeof src, "; top source %s", top->addr);
	bft_log("unauthenticated connections in the last %llu s: %llu "
	    "closed to make room (--max-preauth %u, --max-preauth-per-addr "
	    "%u), %llu refused (--max-conns, --max-client-conns), %llu "
	    "handshakes failed (bad key, garbage or reset), %llu timed out "
	    "(--handshake-timeout %llu ms)%s",
	    (unsigned long long)((now - pa->since_ms + 500) / 1000),
	    (unsigned long long)pa->n[BFT_PA_EVICTED], pa->max,
	    pa->max_per_addr, (unsigned long long)pa->n[BFT_PA_REFUSED],
	    (unsigned long long)pa->n[BFT_PA_FAILED],
	    (unsigned long long)pa->n[BFT_PA_TIMEOUT],
	    (unsigned long long)net->lim.handshake_ms, src);
}

static void
log_tick(struct bft_net *net, uint64_t now)
{
	struct bft_preauth *pa = &net->pa;
	uint64_t total = 0;
	unsigned i;

	if (!pa->busy || now - pa->since_ms < BFT_PREAUTH_LOG_MS)
		return;
	for (i = 0; i < BFT_PA_NEVENTS; i++)
		total += pa->n[i];
	/* More than the line said at once: one line for all of them. */
	if (total > pa->told)
		summarize(net, now);
	else
		pa->busy = false;	/* quiet: the next is said at once */
	memset(pa->n, 0, sizeof pa->n);
	memset(pa->top, 0, sizeof pa->top);
	pa->told = 0;
	pa->since_ms = now;
}

void
bft_preauth_remove(struct conn *c)
{
	struct bft_preauth *pa = &c->net->pa;

	if (!c->preauth)
		return;
	if (c->pa_prev)
		c->pa_prev->pa_next = c->pa_next;
	else
		pa->head = c->pa_next;
	if (c->pa_next)
		c->pa_next->pa_prev = c->pa_prev;
	else
		pa->tail = c->pa_prev;
	c->pa_prev = c->pa_next = NULL;
	c->preauth = false;
	pa->count--;
}

static void
evict(struct bft_net *net, struct conn *v, const char *limit, unsigned n)
{
	bft_preauth_note(net, v->addr, BFT_PA_EVICTED, "conn %s: closing: "
	    "unauthenticated for %llu ms, the oldest of %u (%s), to make room "
	    "for a new connection", v->peer,
	    (unsigned long long)(uv_now(net->loop) - v->accepted_ms), n, limit);
	bft_preauth_remove(v);
	bft_net_conn_close(v);
}

/*
 * When the pool is full the oldest connection goes, not the new one.
 * Refusing the new one would let whoever holds the pool keep it at no
 * cost: a few idle connections per address, reopened as they time out,
 * and a real client behind the same address (a NAT, a shared host, or
 * the other servers on one machine) could never get in.  Closing the
 * oldest instead means an attacker must open a new connection for every
 * one it wants to keep out, faster than a real client finishes its
 * handshake: the client sends its hello with the connect, so it only
 * has to survive one round trip.  And a connection whose client hello
 * already named a listed key (waiting for the finish) has shown more
 * than one that has not, so those still at the hello go first.
 */
void
bft_preauth_add(struct bft_net *net, struct conn *c)
{
	struct bft_preauth *pa = &net->pa;
	struct conn *x, *same_hello = NULL, *same_any = NULL;
	struct conn *any_hello = NULL;
	unsigned same = 0;

	for (x = pa->head; x != NULL; x = x->pa_next) {
		if (x->hs == HS_HELLO && any_hello == NULL)
			any_hello = x;
		if (strcmp(x->addr, c->addr) != 0)
			continue;
		same++;
		if (same_any == NULL)
			same_any = x;
		if (x->hs == HS_HELLO && same_hello == NULL)
			same_hello = x;
	}
	if (same >= pa->max_per_addr)
		evict(net, same_hello ? same_hello : same_any,
		    "--max-preauth-per-addr", same);
	else if (pa->count >= pa->max && pa->head != NULL)
		evict(net, any_hello ? any_hello : pa->head, "--max-preauth",
		    pa->count);
	c->preauth = true;
	c->pa_next = NULL;
	c->pa_prev = pa->tail;
	if (pa->tail)
		pa->tail->pa_next = c;
	else
		pa->head = c;
	pa->tail = c;
	pa->count++;
}

void
bft_preauth_tick(struct bft_net *net, uint64_t now)
{
	struct bft_preauth *pa = &net->pa;
	struct conn *c;

	/* Oldest first: the first still within its deadline ends the scan. */
	while ((c = pa->head) != NULL &&
	    now - c->accepted_ms >= net->lim.handshake_ms) {
		bft_preauth_note(net, c->addr, BFT_PA_TIMEOUT, "conn %s: "
		    "closing: no handshake and HELLO within %llu ms", c->peer,
		    (unsigned long long)net->lim.handshake_ms);
		bft_preauth_remove(c);
		bft_net_conn_close(c);
	}
	log_tick(net, now);
}

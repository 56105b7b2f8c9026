/*
 * A writer's FLUSH: its sync runs on libuv's thread pool, never on the
 * event loop, where fdatasync would hold every client until the disk
 * answers.  One sync runs at a time, and FLUSHes that arrive while it
 * runs wait for the next one, which starts when it ends and covers them
 * all: however many clients flush, at most one sync runs and one waits,
 * so syncs cannot pile up.  A FLUSH is answered once a sync that began
 * after it is durable, which covers every write the client was
 * answered before it.  Until then its connection reads and answers
 * nothing more, so that replies stay in the order of the requests.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "net_int.h"

static void start(struct bft_net *net);

static void
on_work(uv_work_t *w)
{
	struct bft_net_flush *fl = w->data;

	if (fl->job != NULL)
		bft_store_flush_run(fl->job);
}

/* Answers the FLUSHes the sync of generation done covered. */
static void
answer(struct bft_net *net, uint64_t done, int status)
{
	struct bft_msg *rep = &net->rep;
	struct conn *c;

	/* Closing unlinks nothing until the callbacks: the walk is safe. */
	for (c = net->conns; c != NULL; c = c->next) {
		if (c->closing || !c->flush_wait || c->flush_gen > done)
			continue;
		c->flush_wait = false;
		memset(rep, 0, offsetof(struct bft_msg, ts));
		rep->type = BFT_FLUSH | BFT_ACK;
		rep->id = c->flush_id;
		rep->block = c->flush_block;
		rep->status = status;
		if (bft_net_send_reply(c))
			bft_net_process(c);
	}
}

static void
on_done(uv_work_t *w, int uv_status)
{
	struct bft_net_flush *fl = w->data;
	struct bft_net *net = (struct bft_net *)(void *)((char *)fl -
	    offsetof(struct bft_net, fl));
	int err, status = BFT_OK;

	(void)uv_status;
	err = fl->job != NULL ? bft_store_flush_end(net->h->st, fl->job) :
	    -ENOMEM;
	fl->job = NULL;
	fl->running = false;
	if (err < 0) {
		net->h->stats.store_errors++;
		bft_warn("FLUSH: store: %s", strerror(-err));
		status = err == -ENOSPC ? BFT_ENOSPC : BFT_EIO;
	}
	if (net->shut)
		return;
	answer(net, fl->gen, status);
	/* Answering may have started the next sync already. */
	if (fl->wanted && !fl->running)
		start(net);
}

static void
start(struct bft_net *net)
{
	struct bft_net_flush *fl = &net->fl;

	fl->wanted = false;
	fl->gen++;
	/*
	 * Out of memory, the job is NULL and the FLUSHes get EIO, from the
	 * pool's callback too: answering here would run the connection's
	 * frames from inside its own dispatch.
	 */
	fl->job = bft_store_flush_begin(net->h->st);
	fl->running = true;
	fl->work.data = fl;
	/* It fails only for arguments that are never wrong here. */
	(void)uv_queue_work(net->loop, &fl->work, on_work, on_done);
}

bool
bft_net_flush(struct conn *c)
{
	struct bft_net *net = c->net;
	struct bft_net_flush *fl = &net->fl;
	struct bft_msg *rep = &net->rep;

	net->h->stats.requests[BFT_FLUSH]++;
	/*
	 * FLUSH makes the sender's writes durable.  A client that may not
	 * write has none to make durable, and no sync is started for it:
	 * it is answered at once.
	 */
	if (!bft_role_permits(c->client->role, BFT_STORE)) {
		net->h->stats.flush_unsynced++;
		memset(rep, 0, offsetof(struct bft_msg, ts));
		rep->type = BFT_FLUSH | BFT_ACK;
		rep->id = net->req.id;
		rep->block = net->req.block;
		return bft_net_send_reply(c);
	}
	c->flush_wait = true;
	c->flush_id = net->req.id;
	c->flush_block = net->req.block;
	if (fl->running) {
		/* The running sync may have begun before this FLUSH's writes. */
		c->flush_gen = fl->gen + 1;
		fl->wanted = true;
		return true;
	}
	c->flush_gen = fl->gen + 1;
	start(net);
	return true;
}

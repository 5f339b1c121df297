/*
 * fake_upstream.c — see fake_upstream.h: the upstream (upstream.h), the
 * client side of calls (call.h) and the daemon's `nfsd` for unit tests of
 * the request state machines.  Records live until fake_daemon_stop().
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "common/xalloc.h"
#include "daemon/handlers.h"
#include "daemon/writeback.h"
#include "tests/unit/fake_upstream.h"

#define WAIT_MAX_S 5.0
#define STEP_S 0.002
#define DEFAULT_WTMAX 65536

struct nfsd nfsd;

/* The upstream as upstream.h sees it: one, doing nothing by itself. */
struct upstream {
	uint32_t wtmax;
	uint32_t rtmax;
	double srtt_s;   /* upstream_srtt() */
};

static struct upstream the_upstream;

static struct {
	struct fake_call **calls;
	unsigned n_calls, cap_calls;
	struct fake_reply **replies;
	unsigned n_replies, cap_replies;
	uint32_t next_xid;
	char cache_dir[256];
} fake;

/* ---- the daemon ------------------------------------------------------ */

void fake_daemon_start(struct ev_loop *loop, uint32_t max_payload,
		       void (*tune)(struct nfsd_conf *cfg))
{
	memset(&nfsd, 0, sizeof(nfsd));
	memset(&fake, 0, sizeof(fake));
	fake.next_xid = 0x1000;
	the_upstream.wtmax = DEFAULT_WTMAX;
	the_upstream.rtmax = 0;
	nfsd.loop = loop;
	nfsd.upstream = &the_upstream;
	nfsd.max_payload = max_payload;
	if (getrandom(nfsd.write_verf, sizeof(nfsd.write_verf), 0) != (ssize_t)sizeof(nfsd.write_verf))
		abort();
	conf_defaults(&nfsd.cfg);
	snprintf(fake.cache_dir, sizeof(fake.cache_dir), "%s/test_sm.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fake.cache_dir)) {
		perror("mkdtemp");
		exit(1);
	}
	free(nfsd.cfg.cache.dir);
	nfsd.cfg.cache.dir = xstrdup(fake.cache_dir);
	if (tune)
		tune(&nfsd.cfg);
	ev_now_update(loop);
	cache_set_free_hook(nfsd_object_release);   /* as main() does */
	if (cache_init(loop, &nfsd.cfg.cache, "upstream:/export") != 0 || writeback_init(loop) != 0) {
		fprintf(stderr, "cannot open a cache in %s\n", fake.cache_dir);
		exit(1);
	}
	/* the start-up reconciliation holds the index for a moment */
	fake_run_for(0.05);
	nfsd.cache_on = 1;
}

void fake_daemon_stop(void)
{
	writeback_finalise();
	cache_finalise();
	backing_remove_tree(fake.cache_dir);
	for (unsigned i = 0; i < fake.n_calls; i++) {
		free(fake.calls[i]->data);
		free(fake.calls[i]);
	}
	free(fake.calls);
	for (unsigned i = 0; i < fake.n_replies; i++) {
		free(fake.replies[i]->data);
		free(fake.replies[i]);
	}
	free(fake.replies);
	conf_free(&nfsd.cfg);
	memset(&fake, 0, sizeof(fake));
	nfsd.cache_on = 0;
}

static void watchdog_cb(int sig)
{
	static const char msg[] = "Bail out! the test did not end in time\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

void fake_watchdog(unsigned seconds)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watchdog_cb;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

void fake_bail_out(const char *why)
{
	printf("Bail out! %s\n", why);
	fflush(stdout);
	fake_daemon_stop();
	exit(1);
}

static void break_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)t;
	(void)revents;
	ev_break(loop, EVBREAK_ONE);
}

void fake_run_for(double seconds)
{
	ev_timer t;

	ev_now_update(nfsd.loop);
	ev_timer_init(&t, break_cb, seconds, 0.);
	ev_timer_start(nfsd.loop, &t);
	ev_run(nfsd.loop, 0);
	ev_timer_stop(nfsd.loop, &t);
}

int fake_run_until(int (*cond)(void *arg), void *arg, double max_s)
{
	for (double waited = 0; !cond(arg); waited += STEP_S) {
		if (waited > max_s)
			return 0;
		fake_run_for(STEP_S);
	}
	return 1;
}

/* ---- upstream ---------------------------------------------------------- */

int upstream_call(struct upstream *up, const struct proc_desc *desc, void *args,
		  const struct rpc_cred *cred, upstream_done_fn done, void *priv)
{
	struct fake_call *c = xcalloc(1, sizeof(*c));
	const nfs_fh3 *fh = NULL;

	if (up != &the_upstream)
		abort();
	c->seq = fake.n_calls;
	c->proc = desc->proc;
	c->desc = desc;
	c->args = args;
	c->cred = *cred;
	c->done = done;
	c->priv = priv;
	c->pending = 1;
	switch (desc->proc) {
	case NFS3PROC_GETATTR:
		fh = &((GETATTR3args *)args)->object;
		break;
	case NFS3PROC_ACCESS:
		fh = &((ACCESS3args *)args)->object;
		c->access = ((ACCESS3args *)args)->access;
		break;
	case NFS3PROC_READ: {
		READ3args *a = args;
		fh = &a->file;
		c->offset = a->offset;
		c->count = a->count;
		break;
	}
	case NFS3PROC_WRITE: {
		WRITE3args *a = args;
		fh = &a->file;
		c->offset = a->offset;
		c->count = a->count;
		c->stable = a->stable;
		c->data = xmalloc(a->data.data_len ? a->data.data_len : 1);
		memcpy(c->data, a->data.data_val, a->data.data_len);
		break;
	}
	case NFS3PROC_COMMIT: {
		COMMIT3args *a = args;
		fh = &a->file;
		c->offset = a->offset;
		c->count = a->count;
		break;
	}
	}
	if (fh && fh->data.data_len <= NFS3_FHSIZE) {
		c->fh_len = fh->data.data_len;
		memcpy(c->fh, fh->data.data_val, c->fh_len);
	}
	if (fake.n_calls == fake.cap_calls) {
		fake.cap_calls = fake.cap_calls ? 2 * fake.cap_calls : 64;
		fake.calls = xreallocarray(fake.calls, fake.cap_calls, sizeof(*fake.calls));
	}
	fake.calls[fake.n_calls++] = c;
	return 0;
}

uint32_t upstream_wtmax(const struct upstream *up)
{
	return up->wtmax;
}

void fake_upstream_set_wtmax(uint32_t bytes)
{
	the_upstream.wtmax = bytes;
}

uint32_t upstream_rtmax(const struct upstream *up)
{
	return up->rtmax;
}

void fake_upstream_set_rtmax(uint32_t bytes)
{
	the_upstream.rtmax = bytes;
}

double upstream_srtt(const struct upstream *up)
{
	return up->srtt_s;
}

void fake_upstream_set_srtt(double seconds)
{
	the_upstream.srtt_s = seconds;
}

static int proc_is(const struct fake_call *c, uint32_t proc)
{
	return proc == FAKE_ANY_PROC || c->proc == proc;
}

unsigned fake_sent(uint32_t proc)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake.n_calls; i++)
		n += proc_is(fake.calls[i], proc);
	return n;
}

unsigned fake_pending(uint32_t proc)
{
	unsigned n = 0;

	for (unsigned i = 0; i < fake.n_calls; i++)
		n += proc_is(fake.calls[i], proc) && fake.calls[i]->pending;
	return n;
}

struct fake_call *fake_sent_nth(uint32_t proc, unsigned n)
{
	for (unsigned i = 0; i < fake.n_calls; i++)
		if (proc_is(fake.calls[i], proc) && n-- == 0)
			return fake.calls[i];
	return NULL;
}

struct fake_call *fake_pending_nth(uint32_t proc, unsigned n)
{
	for (unsigned i = 0; i < fake.n_calls; i++)
		if (proc_is(fake.calls[i], proc) && fake.calls[i]->pending && n-- == 0)
			return fake.calls[i];
	return NULL;
}

struct pending_wait {
	uint32_t proc;
	unsigned n;
};

static int enough_pending(void *arg)
{
	const struct pending_wait *pw = arg;

	return fake_pending(pw->proc) >= pw->n;
}

int fake_wait_pending(uint32_t proc, unsigned n)
{
	struct pending_wait pw = { proc, n };

	return fake_run_until(enough_pending, &pw, WAIT_MAX_S);
}

void fake_complete(struct fake_call *c, enum upstream_status st, void *res)
{
	if (!c || !c->pending)
		abort();   /* a test completing a call twice is a test bug */
	c->pending = 0;
	c->args = NULL;
	c->done(c->priv, st, st == UPSTREAM_OK ? res : NULL);
}

void fake_complete_status(struct fake_call *c, uint32_t status)
{
	void *res = xcalloc(1, c->desc->res_size ? c->desc->res_size : sizeof(uint32_t));
	*(uint32_t *)res = status;
	fake_complete(c, UPSTREAM_OK, res);
	free(res);
}

void fake_complete_timeout(struct fake_call *c)
{
	fake_complete(c, UPSTREAM_TIMEOUT, NULL);
}

static void post_op(post_op_attr *pa, const fattr3 *attrs)
{
	pa->attributes_follow = attrs != NULL;
	if (attrs)
		pa->post_op_attr_u.attributes = *attrs;
}

READ3res fake_read3res(const fattr3 *attrs, const void *data, uint32_t count, int eof)
{
	READ3res r;

	memset(&r, 0, sizeof(r));
	r.status = NFS3_OK;
	post_op(&r.READ3res_u.resok.file_attributes, attrs);
	r.READ3res_u.resok.count = count;
	r.READ3res_u.resok.eof = eof;
	r.READ3res_u.resok.data.data_len = count;
	r.READ3res_u.resok.data.data_val = (char *)data;
	return r;
}

WRITE3res fake_write3res(uint32_t count, stable_how committed, const char verf[NFS3_WRITEVERFSIZE],
			 const fattr3 *before, const fattr3 *after)
{
	WRITE3res r;
	wcc_data *wcc = &r.WRITE3res_u.resok.file_wcc;

	memset(&r, 0, sizeof(r));
	r.status = NFS3_OK;
	if (before) {
		wcc->before.attributes_follow = 1;
		wcc->before.pre_op_attr_u.attributes.size = before->size;
		wcc->before.pre_op_attr_u.attributes.mtime = before->mtime;
		wcc->before.pre_op_attr_u.attributes.ctime = before->ctime;
	}
	post_op(&wcc->after, after);
	r.WRITE3res_u.resok.count = count;
	r.WRITE3res_u.resok.committed = committed;
	memcpy(r.WRITE3res_u.resok.verf, verf, NFS3_WRITEVERFSIZE);
	return r;
}

COMMIT3res fake_commit3res(const char verf[NFS3_WRITEVERFSIZE], const fattr3 *after)
{
	COMMIT3res r;

	memset(&r, 0, sizeof(r));
	r.status = NFS3_OK;
	post_op(&r.COMMIT3res_u.resok.file_wcc.after, after);
	memcpy(r.COMMIT3res_u.resok.verf, verf, NFS3_WRITEVERFSIZE);
	return r;
}

GETATTR3res fake_getattr3res(const fattr3 *attrs)
{
	GETATTR3res r;

	memset(&r, 0, sizeof(r));
	r.status = NFS3_OK;
	r.GETATTR3res_u.resok.obj_attributes = *attrs;
	return r;
}

ACCESS3res fake_access3res(uint32_t granted, const fattr3 *attrs)
{
	ACCESS3res r;

	memset(&r, 0, sizeof(r));
	r.status = NFS3_OK;
	post_op(&r.ACCESS3res_u.resok.obj_attributes, attrs);
	r.ACCESS3res_u.resok.access = granted;
	return r;
}

/* ---- the client -------------------------------------------------------- */

struct nfsd_call *fake_client_call(uint32_t proc, const struct rpc_cred *cred)
{
	struct nfsd_call *call = xcalloc(1, sizeof(*call));
	const struct proc_desc *desc = proc_nfs3(proc);

	if (!desc)
		abort();
	call->magic = CALL_MAGIC;
	call->desc = desc;
	call->hdr.xid = fake.next_xid++;
	call->hdr.rpcvers = RPC_VERSION;
	call->hdr.prog = desc->prog;
	call->hdr.vers = desc->vers;
	call->hdr.proc = desc->proc;
	call->hdr.cred = *cred;
	call->cred = *cred;
	call->args = xcalloc(1, desc->args_size ? desc->args_size : 1);
	return call;
}

uint32_t fake_dispatch(struct nfsd_call *call)
{
	uint32_t xid = call->hdr.xid;

	call->start = ev_now(nfsd.loop);
	nfsd_proc_of(call->desc)->handler(call);   /* the dispatch table's row */
	return xid;
}

/* What call.c's call_free() does for the modules' sake. */
static void call_free(struct nfsd_call *call)
{
	if (call->magic != CALL_MAGIC)
		abort();
	if (nfsd_proc_of(call->desc)->free)
		nfsd_proc_of(call->desc)->free(call);   /* the handler's per-call state */
	free(call->args);
	call->magic = 0;
	free(call);
}

static struct fake_reply *reply_new(struct nfsd_call *call, enum fake_reply_kind kind)
{
	struct fake_reply *r = xcalloc(1, sizeof(*r));

	if (call->magic != CALL_MAGIC || fake_reply_of(call->hdr.xid))
		abort();   /* answered twice */
	r->xid = call->hdr.xid;
	r->proc = call->desc->proc;
	r->kind = kind;
	if (fake.n_replies == fake.cap_replies) {
		fake.cap_replies = fake.cap_replies ? 2 * fake.cap_replies : 64;
		fake.replies = xreallocarray(fake.replies, fake.cap_replies, sizeof(*fake.replies));
	}
	fake.replies[fake.n_replies++] = r;
	return r;
}

static void copy_post_op(struct fake_reply *r, const post_op_attr *pa)
{
	r->attrs_follow = pa->attributes_follow;
	if (pa->attributes_follow)
		r->attrs = pa->post_op_attr_u.attributes;
}

void call_reply(struct nfsd_call *call, void *res)
{
	struct fake_reply *r = reply_new(call, FAKE_REPLY_RESULT);

	r->status = res ? *(uint32_t *)res : NFS3_OK;
	switch (call->desc->proc) {
	case NFS3PROC_READ: {
		READ3res *rr = res;
		if (rr->status == NFS3_OK) {
			READ3resok *ok = &rr->READ3res_u.resok;
			r->count = ok->count;
			r->eof = ok->eof;
			if (ok->data.data_len != ok->count)
				abort();   /* a reply that says one count and carries another */
			r->data = xmalloc(ok->count ? ok->count : 1);
			memcpy(r->data, ok->data.data_val, ok->count);
			copy_post_op(r, &ok->file_attributes);
		}
		break;
	}
	case NFS3PROC_WRITE: {
		WRITE3res *wr = res;
		if (wr->status == NFS3_OK) {
			r->count = wr->WRITE3res_u.resok.count;
			r->committed = wr->WRITE3res_u.resok.committed;
			memcpy(r->verf, wr->WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
			copy_post_op(r, &wr->WRITE3res_u.resok.file_wcc.after);
		}
		break;
	}
	case NFS3PROC_GETATTR: {
		GETATTR3res *gr = res;
		if (gr->status == NFS3_OK) {
			r->attrs_follow = 1;
			r->attrs = gr->GETATTR3res_u.resok.obj_attributes;
		}
		break;
	}
	case NFS3PROC_LOOKUP: {
		LOOKUP3res *lr = res;
		if (lr->status == NFS3_OK) {
			LOOKUP3resok *ok = &lr->LOOKUP3res_u.resok;
			if (ok->object.data.data_len > sizeof(r->fh))
				abort();
			r->fh_len = ok->object.data.data_len;
			memcpy(r->fh, ok->object.data.data_val, r->fh_len);
			copy_post_op(r, &ok->obj_attributes);
		}
		break;
	}
	case NFS3PROC_ACCESS: {
		ACCESS3res *ar = res;
		if (ar->status == NFS3_OK) {
			r->access = ar->ACCESS3res_u.resok.access;
			copy_post_op(r, &ar->ACCESS3res_u.resok.obj_attributes);
		}
		break;
	}
	case NFS3PROC_COMMIT: {
		COMMIT3res *cr = res;
		if (cr->status == NFS3_OK) {
			memcpy(r->verf, cr->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
			copy_post_op(r, &cr->COMMIT3res_u.resok.file_wcc.after);
		} else {
			copy_post_op(r, &cr->COMMIT3res_u.resfail.file_wcc.after);
		}
		break;
	}
	}
	call_free(call);
}

/* The data read from `fd` as the daemon's socket would send them. */
void call_reply_read_file(struct nfsd_call *call, const READ3res *res, int fd, uint64_t offset)
{
	READ3res copy = *res;
	uint32_t n = res->READ3res_u.resok.count;
	char *buf = xmalloc(n ? n : 1);

	if (pread(fd, buf, n, (off_t)offset) != (ssize_t)n)
		abort();   /* the caller promised the bytes */
	copy.READ3res_u.resok.data.data_val = buf;
	call_reply(call, &copy);
	free(buf);
}

void call_reply_jukebox(struct nfsd_call *call)
{
	struct fake_reply *r = reply_new(call, FAKE_REPLY_JUKEBOX);

	r->status = NFS3ERR_JUKEBOX;
	call_free(call);
}

void call_reply_rpc_error(struct nfsd_call *call, enum rpc_accept_stat stat)
{
	reply_new(call, FAKE_REPLY_RPC_ERROR)->rpc_stat = stat;
	call_free(call);
}

void call_reply_auth_error(struct nfsd_call *call, enum rpc_auth_stat stat)
{
	reply_new(call, FAKE_REPLY_AUTH_ERROR)->rpc_stat = stat;
	call_free(call);
}

void call_drop(struct nfsd_call *call)
{
	reply_new(call, FAKE_REPLY_DROPPED);
	call_free(call);
}

const struct fake_reply *fake_reply_of(uint32_t xid)
{
	for (unsigned i = 0; i < fake.n_replies; i++)
		if (fake.replies[i]->xid == xid)
			return fake.replies[i];
	return NULL;
}

static int answered(void *arg)
{
	return fake_reply_of(*(uint32_t *)arg) != NULL;
}

const struct fake_reply *fake_wait_reply(uint32_t xid)
{
	fake_run_until(answered, &xid, WAIT_MAX_S);
	return fake_reply_of(xid);
}

unsigned fake_replies(void)
{
	return fake.n_replies;
}

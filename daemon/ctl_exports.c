/*
 * ctl_exports.c — the control commands that walk the upstream: `stats`
 * (`stats exports` and the background naming walk) and `invalidate`.  Owns
 * their jobs (struct ctl_job): the upstream's export list (MOUNT EXPORT),
 * MNT of an export, LOOKUPs from its root, GETATTR of its root for the fsid
 * that names it in the per-export counters (stats.h), and the write-back
 * then invalidation of what a path names.  Not the socket, the clients, the
 * permission check or the command table: those are ctl.c's, and the
 * answers go back through its ctl_send() (ctl_exports.h).
 */
#include "config.h"

#include <assert.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "daemon/ctl_exports.h"
#include "daemon/nfs_common.h"
#include "common/log.h"
#include "daemon/nfsd.h"
#include "common/stats.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"
#include "cache/cache.h"
#include "cache/meta.h"
#include "proto/proc.h"
#include "common/xalloc.h"

/* ---- upstream walks: stats exports, invalidate -------------------- */

enum ctl_job_kind { CTL_JOB_STATS, CTL_JOB_INVALIDATE };

struct ctl_job {
	struct ctl_client *c;
	enum ctl_job_kind kind;
	enum stats_format fmt;        /* CTL_JOB_STATS */
	int exports_only;             /* CTL_JOB_STATS: `stats exports` */
	char *path;                   /* CTL_JOB_INVALIDATE: EXPORT/PATH asked for */
	const char *rest;             /* components of path left to look up */
	ARRAY(char *) exports;        /* the upstream's exports clients may mount; malloc'd */
	size_t next;                  /* CTL_JOB_STATS: the next of exports to name */
	dirpath mnt_arg;              /* borrowed from exports.v[] */
	GETATTR3args getattr;
	LOOKUP3args lookup;
	char name[256];               /* the component being looked up */
	uint8_t fh[NFS3_FHSIZE_MAX];      /* the handle reached so far */
	uint32_t fh_len;
	struct rpc_cred cred;         /* root: the command needs root or the group */
	struct writeback_waiter ww;
	struct cache_waiter resolve;  /* CTL_JOB_INVALIDATE: the object's way into memory */
	int resolved;
};

static void ctl_job_free(struct ctl_job *j)
{
	for (size_t i = 0; i < j->exports.n; i++)
		free(j->exports.v[i]);
	ARRAY_FREE(&j->exports);
	free(j->path);
	free(j);
}

/* Answer the job's command: "ok\n" + body, or "error: MESSAGE\n". */
static void ctl_job_answer(struct ctl_job *j, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ctl_job_answer(struct ctl_job *j, int ok, const char *fmt, ...)
{
	char *body = NULL, *r = NULL;
	va_list ap;

	va_start(ap, fmt);
	body = xvasprintf(fmt, ap);
	va_end(ap);
	r = xasprintf("%s%s", ok ? "ok\n" : "error: ", body);
	free(body);
	ctl_send(j->c, r, strlen(r));
	ctl_job_free(j);
}

static int ctl_naming;   /* a background naming walk is running */

static void ctl_job_stats_answer(struct ctl_job *j)
{
	char *body = NULL, *r = NULL;
	size_t len = 0;

	if (!j->c) {   /* the background walk */
		ctl_naming = 0;
		ctl_job_free(j);
		return;
	}
	FILE *out = xopen_memstream(&body, &len);
	if (j->exports_only)
		stats_write_exports(out, j->fmt);
	else
		stats_write(out, j->fmt);
	fclose(out);
	r = xasprintf("ok\n%s", body);
	free(body);
	ctl_send(j->c, r, strlen(r));
	ctl_job_free(j);
}

static const char *ctl_upstream_failure(enum upstream_status st)
{
	switch (st) {
	case UPSTREAM_TIMEOUT: return "upstream unreachable: no answer within upstream.timeout_ms";
	case UPSTREAM_DENIED: return "the upstream refused the credential (AUTH_ERROR)";
	default: return "the upstream answered with an RPC error";
	}
}


static const struct proc_desc *ctl_mount_proc(uint32_t proc)
{
	enum proc_lookup_status why;
	uint32_t lo, hi;
	const struct proc_desc *d = proc_lookup(MOUNT_PROGRAM, MOUNT3_VERSION, proc, &why, &lo, &hi);

	assert(d);
	return d;
}

static void ctl_job_call(struct ctl_job *j, const struct proc_desc *d, void *args,
			 upstream_done_fn done)
{
	upstream_call(nfsd.upstream, d, args, &j->cred, done, j);
}

static void ctl_job_name_next(struct ctl_job *j);
static void ctl_job_lookup_next(struct ctl_job *j);
static void ctl_job_lookup_mnt_done(void *priv, enum upstream_status st, void *res);

/* The upstream's exports, those clients may mount, into j->exports. */
static void ctl_job_export_done(void *priv, enum upstream_status st, void *res)
{
	struct ctl_job *j = priv;

	if (st != UPSTREAM_OK) {
		if (j->kind == CTL_JOB_STATS)
			ctl_job_stats_answer(j);   /* what is known already */
		else
			ctl_job_answer(j, 0, "%s\n", ctl_upstream_failure(st));
		return;
	}
	for (exports e = res ? *(exports *)res : NULL; e; e = e->ex_next) {
		if (!e->ex_dir || !nfsd_export_allowed(e->ex_dir))
			continue;
		ARRAY_PUSH(&j->exports, xstrdup(e->ex_dir));
	}
	if (j->kind == CTL_JOB_STATS) {
		ctl_job_name_next(j);
		return;
	}
	/* the longest export that is a leading part of the path */
	size_t best = 0, best_len = 0;
	for (size_t i = 0; i < j->exports.n; i++) {
		const char *x = j->exports.v[i];
		size_t n = strlen(x);
		while (n > 1 && x[n - 1] == '/')
			n--;
		if (n == 1 && x[0] == '/')
			n = 0;   /* "/" leads every path */
		if (strncmp(j->path, x, n) != 0 || (j->path[n] != '/' && j->path[n] != '\0'))
			continue;
		if (!best_len || n + 1 > best_len) {
			best = i;
			best_len = n + 1;
		}
	}
	if (!best_len) {
		ctl_job_answer(j, 0, "no such file: %s (no upstream export holds it)\n", j->path);
		return;
	}
	j->rest = j->path + best_len - 1;
	j->mnt_arg = j->exports.v[best];
	ctl_job_call(j, ctl_mount_proc(MOUNT3PROC_MNT), &j->mnt_arg, ctl_job_lookup_mnt_done);
}

/* A root handle from a MNT reply into j->fh; 0, or -1 after answering. */
static int ctl_job_take_root(struct ctl_job *j, enum upstream_status st, void *res)
{
	mountres3 *m = res;

	if (st != UPSTREAM_OK || m->fhs_status != MNT3_OK ||
	    m->mountres3_u.mountinfo.fhandle.fhandle3_len == 0 ||
	    m->mountres3_u.mountinfo.fhandle.fhandle3_len > sizeof(j->fh))
		return -1;
	j->fh_len = m->mountres3_u.mountinfo.fhandle.fhandle3_len;
	memcpy(j->fh, m->mountres3_u.mountinfo.fhandle.fhandle3_val, j->fh_len);
	return 0;
}

/* stats: MNT every export (no UMNT: every client of nfscached comes from
 * its address, so the upstream's mount list entry is theirs too), GETATTR
 * its root, name its fsid. */
static void ctl_job_name_getattr_done(void *priv, enum upstream_status st, void *res)
{
	struct ctl_job *j = priv;
	GETATTR3res *r = res;

	if (st == UPSTREAM_OK && r->status == NFS3_OK)
		stats_export_name(r->GETATTR3res_u.resok.obj_attributes.fsid, j->mnt_arg);
	if (st == UPSTREAM_TIMEOUT)
		j->next = j->exports.n;   /* not answering (or stopping): no more calls */
	j->next++;
	ctl_job_name_next(j);
}

static void ctl_job_name_mnt_done(void *priv, enum upstream_status st, void *res)
{
	struct ctl_job *j = priv;

	if (ctl_job_take_root(j, st, res) != 0) {
		if (st == UPSTREAM_TIMEOUT)
			j->next = j->exports.n;
		j->next++;
		ctl_job_name_next(j);
		return;
	}
	j->getattr.object.data.data_len = j->fh_len;
	j->getattr.object.data.data_val = (char *)j->fh;
	ctl_job_call(j, proc_nfs3(NFS3PROC_GETATTR), &j->getattr, ctl_job_name_getattr_done);
}

static void ctl_job_name_next(struct ctl_job *j)
{
	if (j->next >= j->exports.n) {
		ctl_job_stats_answer(j);
		return;
	}
	j->mnt_arg = j->exports.v[j->next];
	ctl_job_call(j, ctl_mount_proc(MOUNT3PROC_MNT), &j->mnt_arg, ctl_job_name_mnt_done);
}

/* invalidate: MNT the export, LOOKUP each component, write the object's
 * dirty data back, drop its clean data. */
static void ctl_job_invalidate_now(struct ctl_job *j)
{
	struct cache_object *o = cache_find(j->fh, j->fh_len);   /* again: it may be gone */
	uint64_t before = o ? o->valid.bytes : 0;

	nfs_fh3 fh = { .data = { j->fh_len, (char *)j->fh } };

	meta_attrs_expire(&fh);
	if (o) {
		cache_invalidate(o, "nfscachectl invalidate");
		log_info("ctl: invalidate %s: %llu bytes dropped", j->path,
			 (unsigned long long)(before - o->valid.bytes));
	}
	ctl_job_answer(j, 1, "%s", "");
}

static void ctl_job_flushed(struct writeback_waiter *w, int status)
{
	struct ctl_job *j = container_of(w, struct ctl_job, ww);

	if (status == 0)
		ctl_job_invalidate_now(j);
	else if (status < 0)
		ctl_job_answer(j, 0, "%s: the upstream did not answer the write-back: nothing dropped\n",
			       j->path);
	else
		ctl_job_answer(j, 0, "%s: a write-back failed: NFS status %d: nothing dropped\n",
			       j->path, status);
}

static void ctl_job_resolved(struct cache_waiter *w);

static void ctl_job_found(struct ctl_job *j)
{
	/* the object may be in the index only: brought into memory first */
	j->resolve.wake = ctl_job_resolved;
	if (!j->resolved && cache_resolve(j->fh, j->fh_len, &j->resolve) == 0)
		return;   /* ctl_job_resolved() */
	struct cache_object *o = cache_find(j->fh, j->fh_len);

	if (!o) {
		ctl_job_answer(j, 1, "%s", "");   /* nothing cached */
		return;
	}
	memset(&j->ww, 0, sizeof(j->ww));
	j->ww.done = ctl_job_flushed;
	if (writeback_flush(o, &j->ww) != 0)
		ctl_job_invalidate_now(j);
}

static void ctl_job_resolved(struct cache_waiter *w)
{
	struct ctl_job *j = container_of(w, struct ctl_job, resolve);

	j->resolved = 1;
	ctl_job_found(j);
}

static void ctl_job_lookup_done(void *priv, enum upstream_status st, void *res)
{
	struct ctl_job *j = priv;
	LOOKUP3res *r = res;

	if (st != UPSTREAM_OK) {
		ctl_job_answer(j, 0, "%s\n", ctl_upstream_failure(st));
		return;
	}
	if (r->status == NFS3ERR_NOENT || r->status == NFS3ERR_NOTDIR) {
		ctl_job_answer(j, 0, "no such file: %s\n", j->path);
		return;
	}
	if (r->status != NFS3_OK) {
		ctl_job_answer(j, 0, "%s: LOOKUP of \"%s\": NFS status %d\n", j->path, j->name,
			       (int)r->status);
		return;
	}
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	if (ok->object.data.data_len == 0 || ok->object.data.data_len > sizeof(j->fh)) {
		ctl_job_answer(j, 0, "%s: the upstream sent a bad file handle\n", j->path);
		return;
	}
	j->fh_len = ok->object.data.data_len;
	memcpy(j->fh, ok->object.data.data_val, j->fh_len);
	while (*j->rest == '/')
		j->rest++;
	if (*j->rest) {
		ctl_job_lookup_next(j);
		return;
	}
	/* cache objects are regular files only: one in the cache is one */
	if (!cache_find(j->fh, j->fh_len) && ok->obj_attributes.attributes_follow &&
	    ok->obj_attributes.post_op_attr_u.attributes.type != NF3REG) {
		ctl_job_answer(j, 0, "not a regular file: %s\n", j->path);
		return;
	}
	ctl_job_found(j);
}

static void ctl_job_lookup_next(struct ctl_job *j)
{
	while (*j->rest == '/')
		j->rest++;
	if (!*j->rest) {
		ctl_job_answer(j, 0, "not a regular file: %s (an export's root)\n", j->path);
		return;
	}
	size_t n = strcspn(j->rest, "/");
	if (n >= sizeof(j->name)) {
		ctl_job_answer(j, 0, "no such file: %s (a name longer than 255 bytes)\n", j->path);
		return;
	}
	memcpy(j->name, j->rest, n);
	j->name[n] = '\0';
	j->rest += n;
	j->lookup.what.dir.data.data_len = j->fh_len;
	j->lookup.what.dir.data.data_val = (char *)j->fh;
	j->lookup.what.name = j->name;
	ctl_job_call(j, proc_nfs3(NFS3PROC_LOOKUP), &j->lookup, ctl_job_lookup_done);
}

static void ctl_job_lookup_mnt_done(void *priv, enum upstream_status st, void *res)
{
	struct ctl_job *j = priv;

	if (st != UPSTREAM_OK) {
		ctl_job_answer(j, 0, "%s\n", ctl_upstream_failure(st));
		return;
	}
	if (ctl_job_take_root(j, st, res) != 0) {
		ctl_job_answer(j, 0, "%s: the upstream refused to mount %s (MNT status %d)\n",
			       j->path, j->mnt_arg, (int)((mountres3 *)res)->fhs_status);
		return;
	}
	ctl_job_lookup_next(j);
}

static struct ctl_job *ctl_job_new(struct ctl_client *c, enum ctl_job_kind kind)
{
	struct ctl_job *j = xcalloc(1, sizeof(*j));
	j->c = c;
	j->kind = kind;
	j->cred.flavor = RPC_AUTH_SYS;   /* uid 0, gid 0 */
	strcpy(j->cred.machinename, "nfscached");
	return j;
}

static void ctl_job_start(struct ctl_job *j)
{
	ctl_job_call(j, ctl_mount_proc(MOUNT3PROC_EXPORT), NULL, ctl_job_export_done);
}

/* stats [exports] [--json|--prometheus]: `stats exports` names every
 * export's file system first (answered with what is known when the upstream
 * is not up).  JSON and Prometheus answer at once, with what is known, and
 * start a naming walk in the background when a file system counted has no
 * name yet (ctl_stats_name_exports): scrapes never wait for the upstream,
 * and the upstream calls of the walk come after the answer. */
void ctl_start_stats(struct ctl_client *c, int argc, char **argv)
{
	enum stats_format fmt = STATS_TEXT;
	int exports_only = argc >= 2 && strcmp(argv[1], "exports") == 0;
	int i = 1 + exports_only;

	if (argc > i + 1) {
		ctl_reply_error(c, "usage: stats [exports] [--json|--prometheus]");
		return;
	}
	if (argc == i + 1) {
		if (strcmp(argv[i], "--json") == 0)
			fmt = STATS_JSON;
		else if (strcmp(argv[i], "--prometheus") == 0)
			fmt = STATS_PROMETHEUS;
		else {
			ctl_reply_error(c, "unknown option (expected exports, --json or --prometheus)");
			return;
		}
	}
	struct ctl_job *j = ctl_job_new(c, CTL_JOB_STATS);
	j->fmt = fmt;
	j->exports_only = exports_only;
	if (exports_only && strcmp(upstream_state(nfsd.upstream), "up") == 0) {
		ctl_job_start(j);
		return;
	}
	ctl_job_stats_answer(j);
	if (fmt != STATS_TEXT)
		ctl_stats_name_exports();
}

void ctl_stats_name_exports(void)
{
	if (ctl_naming || strcmp(upstream_state(nfsd.upstream), "up") != 0 || !stats_export_unnamed())
		return;
	ctl_naming = 1;
	ctl_job_start(ctl_job_new(NULL, CTL_JOB_STATS));
}

static void ctl_invalidate_one(struct cache_object *o, void *arg)
{
	size_t *n = arg;
	uint64_t before = o->valid.bytes;

	cache_invalidate(o, "nfscachectl invalidate --all");
	if (o->valid.bytes != before)
		(*n)++;
}

static void ctl_invalidate_all_done(void *arg, int status)
{
	struct ctl_job *j = arg;
	size_t n = 0;

	if (status < 0) {
		ctl_job_answer(j, 0, "the upstream did not answer the write-back: nothing dropped\n");
		return;
	}
	if (status > 0) {
		ctl_job_answer(j, 0, "a write-back failed: NFS status %d: nothing dropped\n", status);
		return;
	}
	cache_foreach(ctl_invalidate_one, &n);
	n += cache_invalidate_stored();
	meta_clear();
	log_info("ctl: invalidate --all: %zu objects dropped their data; the namespace cache emptied", n);
	ctl_job_answer(j, 1, "objects %zu\n", n);
}

/* invalidate EXPORT/PATH | --all: dirty data is written back first, then
 * the clean data dropped (cache_invalidate never drops dirty bytes). */
void ctl_start_invalidate(struct ctl_client *c, int argc, char **argv)
{
	if (argc != 2 || (argv[1][0] != '/' && strcmp(argv[1], "--all") != 0)) {
		ctl_reply_error(c, "usage: invalidate EXPORT/PATH|--all");
		return;
	}
	if (!nfsd.cache_on) {
		ctl_reply_error(c, "the cache is off: nothing to invalidate");
		return;
	}
	struct ctl_job *j = ctl_job_new(c, CTL_JOB_INVALIDATE);
	j->path = xstrdup(argv[1]);
	if (strcmp(argv[1], "--all") == 0) {
		if (writeback_flush_all(ctl_invalidate_all_done, j) != 0)
			ctl_invalidate_all_done(j, 0);
		return;
	}
	if (strcmp(upstream_state(nfsd.upstream), "up") != 0) {
		ctl_job_answer(j, 0, "upstream unreachable (%s): cannot resolve %s\n",
			       upstream_state(nfsd.upstream), j->path);
		return;
	}
	ctl_job_start(j);
}

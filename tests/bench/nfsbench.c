/*
 * nfsbench — an NFSv3 load generator for benchmarking nfscached against its
 * upstream: one libnfs context, several calls in flight, one poll() loop.
 * It owns the request plan (offsets from a seeded PRNG), the timing of every
 * call from send to callback, and the summary (throughput, IOPS, latency
 * percentiles).  It does not verify data: writes carry a pattern derived from
 * the seed and the offset (pattern_word()) so that a separate checker can.
 *
 * Not built by `make`: `make bench-programs` or `make bench`.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

enum workload { WL_SEQREAD, WL_SEQWRITE, WL_RANDREAD, WL_RANDWRITE, WL_RANDRW, WL_TREE, WL_WALK };

static const char *const workload_names[] = {
	[WL_SEQREAD] = "seqread", [WL_SEQWRITE] = "seqwrite", [WL_RANDREAD] = "randread",
	[WL_RANDWRITE] = "randwrite", [WL_RANDRW] = "randrw", [WL_TREE] = "tree",
	[WL_WALK] = "walk",
};

struct opts {
	enum workload workload;
	uint64_t block_bytes;	/* 0: the workload's default */
	uint64_t size_bytes;	/* 0: the file's size */
	uint64_t requests;	/* rand*: 0 = size / block */
	unsigned depth;		/* calls (tree: files) in flight, >= 1 */
	double read_ratio;	/* randrw: fraction of reads, 0..1 */
	uint64_t align_bytes;	/* rand*: 0 = block */
	uint64_t seed;
	bool create;		/* -c: O_CREAT|O_TRUNC */
	bool file_sync;		/* -F: O_SYNC (FILE_SYNC writes), no COMMIT */
	const char *list_path;	/* tree: file of relative paths */
	bool no_read;		/* walk: metadata calls only, no READ */
	bool json;
	const char *url;
};

struct tree_file {
	struct bench *b;
	char *path;		/* relative to the URL's path, as listed */
	struct nfsfh *fh;
	uint64_t next_offset;	/* bytes */
};

struct bench {
	const struct opts *o;
	struct nfs_context *nfs;
	char *dir;		/* path of the URL relative to the mount, "" or "/a/b" */
	struct nfsfh *fh;	/* the file of non-tree workloads */
	uint64_t size_bytes;	/* offsets range / bytes to move */
	uint64_t block_bytes;
	uint64_t align_bytes;
	uint64_t planned;	/* rand*: requests to send */
	uint64_t sent, in_flight;
	uint64_t next_offset;	/* seq*: bytes */
	bool eof;		/* seqread: a short read was seen */
	uint64_t prng;		/* splitmix64 state */
	uint64_t pattern_key;	/* mixes the seed into the write pattern */

	struct tree_file *files;
	size_t nfiles, next_file, files_open;

	struct walk *walk;	/* walk workload only */

	uint64_t reads, writes, bytes, errors;
	char *first_error;
	uint64_t *lat_ns;	/* one sample per data call */
	size_t nlat, lat_cap;
	uint64_t t_start_ns, t_end_ns;

	bool step_done;		/* the set-up step in progress has called back */
	int step_err;
	bool stopping;		/* a call failed: send nothing new */
	bool done;		/* the timed phase (and COMMIT) is over */
};

struct call {
	struct bench *b;
	uint64_t t0_ns;
	uint64_t offset;	/* bytes */
	uint64_t length;	/* bytes asked */
	bool is_write;
	struct tree_file *tf;	/* tree workload only */
	void *buf;		/* write data, kept until the callback */
};

static void issue_more(struct bench *b);

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		fprintf(stderr, "nfsbench: out of memory\n");
		abort();
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (p == NULL) {
		fprintf(stderr, "nfsbench: out of memory\n");
		abort();
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a small PRNG whose whole state is one word */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* uniform in [0, n), n > 0 (the modulo bias is negligible for n << 2^64) */
static uint64_t prng_below(struct bench *b, uint64_t n)
{
	return splitmix64(&b->prng) % n;
}

/*
 * The write pattern: the little-endian 64-bit word at file offset 8*k is
 * (k * 0x9e3779b97f4a7c15) ^ key, key = splitmix64 of the seed.  Cheap
 * enough to generate while calls are in flight; never zero pages.
 */
static uint64_t pattern_word(uint64_t key, uint64_t word_index)
{
	return (word_index * 0x9e3779b97f4a7c15u) ^ key;
}

static void pattern_fill(uint64_t key, uint64_t offset, uint8_t *buf, uint64_t len)
{
	for (uint64_t i = 0; i < len;) {
		uint64_t pos = offset + i, w = pattern_word(key, pos / 8);
		if (pos % 8 == 0 && len - i >= 8) {
			for (unsigned s = 0; s < 8; s++)
				buf[i + s] = (uint8_t)(w >> (8 * s));
			i += 8;
		} else {
			buf[i++] = (uint8_t)(w >> (8 * (pos % 8)));
		}
	}
}

static void record_error(struct bench *b, const char *what, int err, const char *msg)
{
	b->errors++;
	/* Sending from this callback could re-enter libnfs while it fails
	 * every queued call of a dead connection (4.0 asserts then). */
	b->stopping = true;
	if (b->first_error != NULL)
		return;
	if (msg == NULL || *msg == '\0')
		msg = strerror(-err);
	size_t n = strlen(what) + strlen(msg) + 3;
	b->first_error = xmalloc(n);
	snprintf(b->first_error, n, "%s: %s", what, msg);
}

static void record_latency(struct bench *b, uint64_t ns)
{
	if (b->nlat == b->lat_cap) {
		b->lat_cap = b->lat_cap ? 2 * b->lat_cap : 4096;
		b->lat_ns = xrealloc(b->lat_ns, b->lat_cap * sizeof(*b->lat_ns));
	}
	b->lat_ns[b->nlat++] = ns;
}

/* ---- the event loop ---------------------------------------------------- */

/* Runs the loop until *flag is set.  Returns 0, or -EIO when the context
 * failed as a whole (the message is printed). */
static int loop_until(struct bench *b, const bool *flag)
{
	while (!*flag) {
		struct pollfd pfd = {
			.fd = nfs_get_fd(b->nfs),
			.events = (short)nfs_which_events(b->nfs),
		};
		int n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "nfsbench: poll: %s\n", strerror(errno));
			return -EIO;
		}
		if (nfs_service(b->nfs, n > 0 ? pfd.revents : 0) < 0) {
			fprintf(stderr, "nfsbench: %s\n", nfs_get_error(b->nfs));
			return -EIO;
		}
	}
	return 0;
}

/* ---- set-up steps: mount, open, fstat (not timed) ------------------------ */

static void step_done_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct bench *b = private_data;
	(void)nfs;
	b->step_err = err;
	if (err < 0)
		fprintf(stderr, "nfsbench: %s\n", data ? (const char *)data : strerror(-err));
	b->step_done = true;
}

static void open_done_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct bench *b = private_data;
	if (err == 0)
		b->fh = data;
	step_done_cb(err, nfs, data, private_data);
}

static void fstat_done_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct bench *b = private_data;
	if (err == 0)
		b->size_bytes = ((struct nfs_stat_64 *)data)->nfs_size;
	step_done_cb(err, nfs, data, private_data);
}

/* Starts one async set-up call (its return value in rc) and waits for it. */
static int run_step(struct bench *b, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "nfsbench: %s\n", nfs_get_error(b->nfs));
		return rc;
	}
	b->step_done = false;
	rc = loop_until(b, &b->step_done);
	return rc < 0 ? rc : b->step_err;
}

/*
 * Mounts the export holding the URL's path.  An NFSv3 URL does not say
 * where the export ends, so the longest parent directory is tried first
 * (as libnfs's own tools do) and then each shorter one, on a fresh context
 * each time.  For tree the path itself (a directory) is tried first.
 */
static int bench_mount(struct bench *b)
{
	struct nfs_context *probe = nfs_init_context();
	if (probe == NULL) {
		fprintf(stderr, "nfsbench: cannot create an NFS context\n");
		return -ENOMEM;
	}
	struct nfs_url *url = nfs_parse_url_dir(probe, b->o->url);
	if (url == NULL || url->server == NULL || url->path == NULL || url->path[0] != '/') {
		fprintf(stderr, "nfsbench: %s: %s\n", b->o->url, nfs_get_error(probe));
		if (url != NULL)
			nfs_destroy_url(url);
		nfs_destroy_context(probe);
		return -EINVAL;
	}
	char *full = xstrdup(url->path);
	size_t len = strlen(full);
	while (len > 1 && full[len - 1] == '/')
		full[--len] = '\0';
	nfs_destroy_url(url);
	nfs_destroy_context(probe);

	int rc = -ENOENT;
	size_t cut = b->o->workload == WL_TREE ? len : len - 1;
	for (; cut > 0; cut--) {
		if (cut != len && full[cut] != '/')
			continue;
		char *export = xstrdup(full);
		export[cut] = '\0';
		b->nfs = nfs_init_context();
		url = b->nfs ? nfs_parse_url_dir(b->nfs, b->o->url) : NULL;
		if (url == NULL) {
			fprintf(stderr, "nfsbench: %s\n", b->nfs ? nfs_get_error(b->nfs) : "no context");
			free(export);
			rc = -EINVAL;
			break;
		}
		nfs_set_autoreconnect(b->nfs, 0);	/* a failed call is an error, not a retry */
		rc = run_step(b, nfs_mount_async(b->nfs, url->server, export, step_done_cb, b));
		nfs_destroy_url(url);
		free(export);
		if (rc == 0) {
			b->dir = xstrdup(full + cut);
			break;
		}
		nfs_destroy_context(b->nfs);
		b->nfs = NULL;
	}
	free(full);
	return rc;
}

static int bench_open(struct bench *b)
{
	const struct opts *o = b->o;
	bool writes = o->workload == WL_SEQWRITE || o->workload == WL_RANDWRITE ||
		      o->workload == WL_RANDRW;
	int flags = !writes ? O_RDONLY : o->workload == WL_RANDRW ? O_RDWR : O_WRONLY;
	if (writes && o->create)
		flags |= O_CREAT | O_TRUNC;
	if (writes && o->file_sync)
		flags |= O_SYNC;
	int rc = run_step(b, nfs_open2_async(b->nfs, b->dir, flags, 0644, open_done_cb, b));
	if (rc < 0)
		return rc;
	if (o->size_bytes != 0) {
		b->size_bytes = o->size_bytes;
		return 0;
	}
	if (writes && o->create) {
		fprintf(stderr, "nfsbench: %s -c needs -s SIZE\n", workload_names[o->workload]);
		return -EINVAL;
	}
	return run_step(b, nfs_fstat64_async(b->nfs, b->fh, fstat_done_cb, b));
}

/* ---- data calls ---------------------------------------------------------- */

static void call_free(struct call *c)
{
	if (c == NULL)
		return;
	free(c->buf);
	free(c);
}

/* the common end of every data call; frees c */
static void call_end(struct call *c, int err, const void *data)
{
	struct bench *b = c->b;
	record_latency(b, now_ns() - c->t0_ns);
	b->in_flight--;
	if (err < 0) {
		char what[96];
		snprintf(what, sizeof(what), "%s at %" PRIu64, c->is_write ? "WRITE" : "READ", c->offset);
		record_error(b, what, err, data);
	} else {
		b->bytes += (uint64_t)err;
	}
	call_free(c);
}

static void rw_done_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct call *c = private_data;
	struct bench *b = c->b;
	(void)nfs;
	if (!c->is_write && err >= 0 && (uint64_t)err < c->length)
		b->eof = true;	/* seqread: a short read is the end of the file */
	if (c->is_write && err >= 0 && (uint64_t)err < c->length)
		fprintf(stderr, "nfsbench: short WRITE at %" PRIu64 ": %d of %" PRIu64 " bytes\n",
			c->offset, err, c->length);
	call_end(c, err, data);
	issue_more(b);
}

static int send_call(struct bench *b, uint64_t offset, uint64_t length, bool is_write,
		     struct tree_file *tf, nfs_cb cb)
{
	struct call *c = xmalloc(sizeof(*c));
	*c = (struct call){ .b = b, .offset = offset, .length = length, .is_write = is_write,
			    .tf = tf };
	struct nfsfh *fh = tf != NULL ? tf->fh : b->fh;
	int rc;
	if (is_write) {
		c->buf = xmalloc(length);
		pattern_fill(b->pattern_key, offset, c->buf, length);
		c->t0_ns = now_ns();
		rc = nfs_pwrite_async(b->nfs, fh, offset, length, c->buf, cb, c);
		b->writes++;
	} else {
		c->t0_ns = now_ns();
		rc = nfs_pread_async(b->nfs, fh, offset, length, cb, c);
		b->reads++;
	}
	b->sent++;
	if (rc < 0) {
		record_error(b, is_write ? "WRITE" : "READ", rc, nfs_get_error(b->nfs));
		call_free(c);
		return rc;
	}
	b->in_flight++;
	return 0;
}

/* ---- tree: -j files at once, one READ in flight per file ------------------ */

static void tree_next_file(struct bench *b);

static void tree_close_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct bench *b = private_data;
	(void)nfs;
	if (err < 0)
		record_error(b, "CLOSE", err, data);
}

/* the file is done (read whole or failed): close it, start the next one */
static void tree_file_end(struct bench *b, struct tree_file *tf)
{
	if (tf->fh != NULL && nfs_close_async(b->nfs, tf->fh, tree_close_cb, b) < 0)
		record_error(b, "CLOSE", -EIO, nfs_get_error(b->nfs));
	tf->fh = NULL;
	b->files_open--;
	tree_next_file(b);
}

static void tree_read_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct call *c = private_data;
	struct bench *b = c->b;
	struct tree_file *tf = c->tf;
	(void)nfs;
	bool more = err >= 0 && (uint64_t)err == c->length;
	call_end(c, err, data);
	if (more && !b->stopping) {
		tf->next_offset += b->block_bytes;
		if (send_call(b, tf->next_offset, b->block_bytes, false, tf, tree_read_cb) == 0)
			return;
	}
	tree_file_end(b, tf);
}

static void tree_open_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct tree_file *tf = private_data;
	struct bench *b = tf->b;
	(void)nfs;
	if (err < 0) {
		char what[600];
		snprintf(what, sizeof(what), "OPEN %s", tf->path);
		record_error(b, what, err, data);
		tree_file_end(b, tf);
		return;
	}
	tf->fh = data;
	if (send_call(b, 0, b->block_bytes, false, tf, tree_read_cb) < 0)
		tree_file_end(b, tf);
}

static void tree_next_file(struct bench *b)
{
	while (!b->stopping && b->files_open < b->o->depth && b->next_file < b->nfiles) {
		struct tree_file *tf = &b->files[b->next_file++];
		size_t n = strlen(b->dir) + strlen(tf->path) + 2;
		char *path = xmalloc(n);
		snprintf(path, n, "%s/%s", b->dir, tf->path);
		b->files_open++;
		int rc = nfs_open_async(b->nfs, path, O_RDONLY, tree_open_cb, tf);
		free(path);
		if (rc < 0) {
			record_error(b, "OPEN", rc, nfs_get_error(b->nfs));
			b->files_open--;
		}
	}
	if (b->files_open == 0 && (b->next_file == b->nfiles || b->stopping)) {
		b->t_end_ns = now_ns();
		b->done = true;
	}
}

static int tree_load_list(struct bench *b)
{
	FILE *f = fopen(b->o->list_path, "r");
	if (f == NULL) {
		fprintf(stderr, "nfsbench: %s: %s\n", b->o->list_path, strerror(errno));
		return -errno;
	}
	char line[4096];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		const char *p = line;
		while (*p == '/')
			p++;
		if (*p == '\0')
			continue;
		if (b->nfiles == cap) {
			cap = cap ? 2 * cap : 256;
			b->files = xrealloc(b->files, cap * sizeof(*b->files));
		}
		b->files[b->nfiles++] = (struct tree_file){ .b = b, .path = xstrdup(p) };
	}
	fclose(f);
	if (b->nfiles == 0) {
		fprintf(stderr, "nfsbench: %s: no files listed\n", b->o->list_path);
		return -EINVAL;
	}
	return 0;
}

/* ---- walk: a fresh client walking a tree with raw NFSv3 calls ------------ */

/*
 * The calls of a client that lists a tree and opens and reads every file in
 * it, one by one as `ls -lR` followed by `cat` would, without the help of a
 * client cache of its own: READDIRPLUS of each directory (every page), then
 * for each file LOOKUP, ACCESS, GETATTR and READs to the end.  Made with the
 * raw RPC API so that exactly these calls go out: MNT of the export (the
 * longest parent of the URL's path the server accepts) and LOOKUPs down to
 * the URL's directory are set-up, not timed.  -j is the number of
 * directories or files being worked on at once (one call in flight each);
 * -n bounds the files; -N leaves the READs out.
 */
enum walk_proc { WP_READDIRPLUS, WP_LOOKUP, WP_ACCESS, WP_GETATTR, WP_READ, WP_N };
static const char *const walk_proc_names[WP_N] = {
	"READDIRPLUS", "LOOKUP", "ACCESS", "GETATTR", "READ",
};
/* what a client opening a file asks (Linux asks for every bit) */
#define WALK_ACCESS_MASK (ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | \
			  ACCESS3_DELETE | ACCESS3_EXECUTE)
#define WALK_DIRCOUNT 16384u
#define WALK_MAXCOUNT 65536u

struct walk_dir {
	nfs_fh3 fh;		/* owned copy */
};

struct walk_file {
	size_t dir;		/* index into walk.dirs */
	char *name;
	bool regular;		/* READ it (attributes said NF3REG, or said nothing) */
};

/* a directory being listed or a file being worked on: one call in flight */
struct walk_op {
	struct walk *w;
	bool is_dir;
	size_t index;		/* into dirs or files */
	nfs_fh3 fh;		/* a file's handle from its LOOKUP (owned) */
	uint64_t offset;	/* a file's next READ; a directory's next cookie */
	char verf[NFS3_COOKIEVERFSIZE];
	enum walk_proc proc;
	uint64_t t0_ns;
};

struct walk {
	struct bench *b;
	struct rpc_context *rpc;	/* the NFS connection */
	nfs_fh3 root;			/* the walk's top directory */
	struct walk_dir *dirs;
	size_t ndirs, dirs_cap, next_dir;
	struct walk_file *files;
	size_t nfiles, files_cap, next_file;
	uint64_t calls[WP_N];
	uint64_t entries;		/* directory entries, . and .. excepted */
	uint64_t in_flight;
	uint64_t setup_ns;
	/* set-up steps */
	bool step_done;
	int step_status;		/* RPC_STATUS_* */
	int step_nfs;			/* MNT or NFS status of the step */
	nfs_fh3 step_fh;		/* handle the step brought (owned) */
};

static void fh_copy(nfs_fh3 *dst, const nfs_fh3 *src)
{
	dst->data.data_len = src->data.data_len;
	dst->data.data_val = xmalloc(src->data.data_len);
	memcpy(dst->data.data_val, src->data.data_val, src->data.data_len);
}

static void fh_free(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

/* Runs the loop of `rpc` until *flag is set; -EIO when the connection failed. */
static int rpc_loop_until(struct rpc_context *rpc, const bool *flag)
{
	while (!*flag) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc) };
		int n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "nfsbench: poll: %s\n", strerror(errno));
			return -EIO;
		}
		if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
			fprintf(stderr, "nfsbench: %s\n", rpc_get_error(rpc));
			return -EIO;
		}
	}
	return 0;
}

static void walk_step_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct walk *w = private_data;
	(void)rpc;
	w->step_status = status;
	if (status != RPC_STATUS_SUCCESS && data != NULL)
		fprintf(stderr, "nfsbench: %s\n", (const char *)data);
	w->step_done = true;
}

static void walk_mnt_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct walk *w = private_data;
	if (status == RPC_STATUS_SUCCESS) {
		mountres3 *res = data;
		w->step_nfs = (int)res->fhs_status;
		if (res->fhs_status == MNT3_OK) {
			const fhandle3 *h = &res->mountres3_u.mountinfo.fhandle;
			nfs_fh3 fh = { .data = { .data_len = h->fhandle3_len, .data_val = h->fhandle3_val } };
			fh_copy(&w->step_fh, &fh);
		}
		status = RPC_STATUS_SUCCESS;
	}
	walk_step_cb(rpc, status, status == RPC_STATUS_SUCCESS ? NULL : data, private_data);
}

static void walk_setup_lookup_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct walk *w = private_data;
	if (status == RPC_STATUS_SUCCESS) {
		LOOKUP3res *res = data;
		w->step_nfs = (int)res->status;
		if (res->status == NFS3_OK)
			fh_copy(&w->step_fh, &res->LOOKUP3res_u.resok.object);
		data = NULL;
	}
	walk_step_cb(rpc, status, data, private_data);
}

/* Starts a set-up call (its return value in rc) on `rpc` and waits for it. */
static int walk_step(struct walk *w, struct rpc_context *rpc, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "nfsbench: %s\n", rpc_get_error(rpc));
		return rc;
	}
	w->step_done = false;
	w->step_nfs = 0;
	rc = rpc_loop_until(rpc, &w->step_done);
	if (rc < 0)
		return rc;
	return w->step_status == RPC_STATUS_SUCCESS ? 0 : -EIO;
}

/* the value of PARAM=N in the URL's query, or 0 */
static int url_port(const char *url, const char *param)
{
	const char *q = strchr(url, '?');
	size_t n = strlen(param);
	while (q != NULL) {
		q++;
		if (strncmp(q, param, n) == 0 && q[n] == '=')
			return atoi(q + n + 1);
		q = strchr(q, '&');
	}
	return 0;
}

static int walk_connect(struct walk *w, struct rpc_context *rpc, const char *server, int port,
			int program, int version)
{
	int rc = port != 0
		? rpc_connect_port_async(rpc, server, port, program, version, walk_step_cb, w)
		: rpc_connect_program_async(rpc, server, program, version, walk_step_cb, w);
	return walk_step(w, rpc, rc);
}

/* Mounts the longest parent of the URL's path the server accepts and looks
 * the rest up: w->root.  Not timed. */
static int walk_setup(struct bench *b)
{
	struct walk *w = b->walk;
	uint64_t t0 = now_ns();
	struct nfs_context *probe = nfs_init_context();
	if (probe == NULL)
		return -ENOMEM;
	struct nfs_url *url = nfs_parse_url_dir(probe, b->o->url);
	if (url == NULL || url->server == NULL || url->path == NULL || url->path[0] != '/') {
		fprintf(stderr, "nfsbench: %s: %s\n", b->o->url, nfs_get_error(probe));
		if (url != NULL)
			nfs_destroy_url(url);
		nfs_destroy_context(probe);
		return -EINVAL;
	}
	char *server = xstrdup(url->server), *full = xstrdup(url->path);
	nfs_destroy_url(url);
	nfs_destroy_context(probe);
	size_t len = strlen(full);
	while (len > 1 && full[len - 1] == '/')
		full[--len] = '\0';

	int rc = -ENOENT;
	size_t cut = len;
	struct rpc_context *m = rpc_init_context();
	if (m == NULL || walk_connect(w, m, server, url_port(b->o->url, "mountport"),
				      MOUNT_PROGRAM, MOUNT_V3) < 0) {
		fprintf(stderr, "nfsbench: cannot connect to the MOUNT service of %s\n", server);
		goto out;
	}
	for (; cut > 0; cut--) {
		if (cut != len && full[cut] != '/')
			continue;
		char save = full[cut];
		full[cut] = '\0';
		rc = walk_step(w, m, rpc_mount3_mnt_async(m, walk_mnt_cb, full, w));
		full[cut] = save;
		if (rc < 0)
			goto out;
		if (w->step_nfs == MNT3_OK)
			break;
		rc = -ENOENT;
	}
	if (cut == 0) {
		fprintf(stderr, "nfsbench: no export of %s leads to %s\n", server, full);
		goto out;
	}
	w->root = w->step_fh;
	w->step_fh = (nfs_fh3){ 0 };
	w->rpc = rpc_init_context();
	if (w->rpc == NULL || walk_connect(w, w->rpc, server, url_port(b->o->url, "nfsport"),
					   NFS_PROGRAM, NFS_V3) < 0) {
		fprintf(stderr, "nfsbench: cannot connect to the NFS service of %s\n", server);
		rc = -EIO;
		goto out;
	}
	/* the components of the path below the export */
	for (char *p = full + cut, *name; (name = strtok(p, "/")) != NULL; p = NULL) {
		LOOKUP3args a = { .what = { .dir = w->root, .name = name } };
		rc = walk_step(w, w->rpc, rpc_nfs3_lookup_async(w->rpc, walk_setup_lookup_cb, &a, w));
		if (rc == 0 && w->step_nfs != NFS3_OK) {
			fprintf(stderr, "nfsbench: LOOKUP %s: NFS status %d\n", name, w->step_nfs);
			rc = -ENOENT;
		}
		if (rc < 0)
			goto out;
		fh_free(&w->root);
		w->root = w->step_fh;
		w->step_fh = (nfs_fh3){ 0 };
	}
	rc = 0;
out:
	if (m != NULL)
		rpc_destroy_context(m);
	free(server);
	free(full);
	w->setup_ns = now_ns() - t0;
	return rc;
}

static void walk_next(struct walk *w);

static void walk_add_dir(struct walk *w, const nfs_fh3 *fh)
{
	if (w->ndirs == w->dirs_cap) {
		w->dirs_cap = w->dirs_cap ? 2 * w->dirs_cap : 64;
		w->dirs = xrealloc(w->dirs, w->dirs_cap * sizeof(*w->dirs));
	}
	fh_copy(&w->dirs[w->ndirs++].fh, fh);
}

static void walk_add_file(struct walk *w, size_t dir, const char *name, bool regular)
{
	if (w->nfiles == w->files_cap) {
		w->files_cap = w->files_cap ? 2 * w->files_cap : 256;
		w->files = xrealloc(w->files, w->files_cap * sizeof(*w->files));
	}
	w->files[w->nfiles++] = (struct walk_file){ .dir = dir, .name = xstrdup(name),
						    .regular = regular };
}

static void walk_op_end(struct walk_op *op)
{
	struct walk *w = op->w;
	fh_free(&op->fh);
	free(op);
	walk_next(w);
}

static void walk_cb(struct rpc_context *rpc, int status, void *data, void *private_data);

/* Sends op's next call (op->proc); on failure the op ends. */
static void walk_send(struct walk_op *op)
{
	struct walk *w = op->w;
	struct bench *b = w->b;
	int rc;
	op->t0_ns = now_ns();
	switch (op->proc) {
	case WP_READDIRPLUS: {
		READDIRPLUS3args a = { .dir = w->dirs[op->index].fh, .cookie = op->offset,
				       .dircount = WALK_DIRCOUNT, .maxcount = WALK_MAXCOUNT };
		memcpy(a.cookieverf, op->verf, sizeof(a.cookieverf));
		rc = rpc_nfs3_readdirplus_async(w->rpc, walk_cb, &a, op);
		break;
	}
	case WP_LOOKUP: {
		struct walk_file *f = &w->files[op->index];
		LOOKUP3args a = { .what = { .dir = w->dirs[f->dir].fh, .name = f->name } };
		rc = rpc_nfs3_lookup_async(w->rpc, walk_cb, &a, op);
		break;
	}
	case WP_ACCESS: {
		ACCESS3args a = { .object = op->fh, .access = WALK_ACCESS_MASK };
		rc = rpc_nfs3_access_async(w->rpc, walk_cb, &a, op);
		break;
	}
	case WP_GETATTR: {
		GETATTR3args a = { .object = op->fh };
		rc = rpc_nfs3_getattr_async(w->rpc, walk_cb, &a, op);
		break;
	}
	case WP_READ: {
		READ3args a = { .file = op->fh, .offset = op->offset, .count = (count3)b->block_bytes };
		rc = rpc_nfs3_read_async(w->rpc, walk_cb, &a, op);
		b->reads++;
		break;
	}
	default:
		rc = -EINVAL;
	}
	if (rc < 0) {
		record_error(b, walk_proc_names[op->proc], -EIO, rpc_get_error(w->rpc));
		walk_op_end(op);
		return;
	}
	w->calls[op->proc]++;
	w->in_flight++;
}

/* a page of a directory's listing: its entries queued */
static bool walk_dir_page(struct walk_op *op, const READDIRPLUS3resok *ok)
{
	struct walk *w = op->w;
	uint64_t last = op->offset;
	for (const entryplus3 *e = ok->reply.entries; e != NULL; e = e->nextentry) {
		last = e->cookie;
		if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
			continue;
		w->entries++;
		bool has_type = e->name_attributes.attributes_follow;
		ftype3 type = has_type ? e->name_attributes.post_op_attr_u.attributes.type : NF3REG;
		if (type == NF3DIR) {
			if (!e->name_handle.handle_follows) {
				record_error(w->b, "READDIRPLUS", -EIO, "a directory entry without a handle");
				return false;
			}
			walk_add_dir(w, &e->name_handle.post_op_fh3_u.handle);
		} else {
			walk_add_file(w, op->index, e->name, type == NF3REG);
		}
	}
	if (ok->reply.eof)
		return false;
	op->offset = last;
	memcpy(op->verf, ok->cookieverf, sizeof(op->verf));
	return true;	/* another page */
}

static void walk_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct walk_op *op = private_data;
	struct walk *w = op->w;
	struct bench *b = w->b;
	(void)rpc;
	record_latency(b, now_ns() - op->t0_ns);
	w->in_flight--;
	const char *what = walk_proc_names[op->proc];
	if (status != RPC_STATUS_SUCCESS) {
		record_error(b, what, -EIO, status == RPC_STATUS_ERROR ? data : "cancelled");
		walk_op_end(op);
		return;
	}
	nfsstat3 st;
	bool more = false;
	switch (op->proc) {
	case WP_READDIRPLUS: {
		READDIRPLUS3res *r = data;
		st = r->status;
		if (st == NFS3_OK)
			more = walk_dir_page(op, &r->READDIRPLUS3res_u.resok);
		break;
	}
	case WP_LOOKUP: {
		LOOKUP3res *r = data;
		st = r->status;
		if (st == NFS3_OK) {
			fh_copy(&op->fh, &r->LOOKUP3res_u.resok.object);
			op->proc = WP_ACCESS;
			more = true;
		}
		break;
	}
	case WP_ACCESS:
		st = ((ACCESS3res *)data)->status;
		op->proc = WP_GETATTR;
		more = st == NFS3_OK;
		break;
	case WP_GETATTR:
		st = ((GETATTR3res *)data)->status;
		op->proc = WP_READ;
		op->offset = 0;
		more = st == NFS3_OK && !b->o->no_read && w->files[op->index].regular;
		break;
	case WP_READ: {
		READ3res *r = data;
		st = r->status;
		if (st == NFS3_OK) {
			const READ3resok *ok = &r->READ3res_u.resok;
			b->bytes += ok->count;
			op->offset += ok->count;
			more = !ok->eof && ok->count > 0;
		}
		break;
	}
	default:
		st = NFS3ERR_SERVERFAULT;
	}
	if (st != NFS3_OK) {
		char msg[32];
		snprintf(msg, sizeof(msg), "NFS status %d", (int)st);
		record_error(b, what, -EIO, msg);
		more = false;
	}
	if (more && !b->stopping)
		walk_send(op);
	else
		walk_op_end(op);
}

/* Starts files, then directories, until -j are being worked on. */
static void walk_next(struct walk *w)
{
	struct bench *b = w->b;
	uint64_t max_files = b->o->requests;	/* -n */
	size_t open_ops = (size_t)w->in_flight;
	while (!b->stopping && open_ops < b->o->depth) {
		struct walk_op *op;
		if (w->next_file < w->nfiles && (max_files == 0 || w->next_file < max_files)) {
			op = xmalloc(sizeof(*op));
			*op = (struct walk_op){ .w = w, .index = w->next_file++, .proc = WP_LOOKUP };
		} else if (w->next_dir < w->ndirs && (max_files == 0 || w->nfiles < max_files)) {
			op = xmalloc(sizeof(*op));
			*op = (struct walk_op){ .w = w, .is_dir = true, .index = w->next_dir++,
						.proc = WP_READDIRPLUS };
		} else {
			break;
		}
		open_ops++;
		walk_send(op);
		open_ops = (size_t)w->in_flight;
	}
	if (w->in_flight == 0 && !b->done) {
		b->t_end_ns = now_ns();
		b->done = true;
	}
}

static void walk_free(struct walk *w)
{
	if (w == NULL)
		return;
	if (w->rpc != NULL)
		rpc_destroy_context(w->rpc);
	fh_free(&w->root);
	fh_free(&w->step_fh);
	for (size_t i = 0; i < w->ndirs; i++)
		fh_free(&w->dirs[i].fh);
	for (size_t i = 0; i < w->nfiles; i++)
		free(w->files[i].name);
	free(w->dirs);
	free(w->files);
	free(w);
}

/* ---- the plan: what to send next ----------------------------------------- */

static void commit_done_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct bench *b = private_data;
	(void)nfs;
	if (err < 0)
		record_error(b, "COMMIT", err, data);
	b->t_end_ns = now_ns();
	b->done = true;
}

/* all data calls have called back: COMMIT unstable writes, or stop the clock */
static void finish(struct bench *b)
{
	if (b->writes > 0 && !b->o->file_sync && !b->stopping) {
		if (nfs_fsync_async(b->nfs, b->fh, commit_done_cb, b) == 0)
			return;
		record_error(b, "COMMIT", -EIO, nfs_get_error(b->nfs));
	}
	b->t_end_ns = now_ns();
	b->done = true;
}

/* Sends calls until depth are in flight or the plan is exhausted. */
static void issue_more(struct bench *b)
{
	const struct opts *o = b->o;
	while (b->in_flight < o->depth && !b->stopping) {
		if (o->workload == WL_SEQREAD || o->workload == WL_SEQWRITE) {
			if (b->next_offset >= b->size_bytes || b->eof)
				break;
			uint64_t len = b->size_bytes - b->next_offset;
			if (len > b->block_bytes)
				len = b->block_bytes;
			uint64_t off = b->next_offset;
			b->next_offset += len;
			send_call(b, off, len, o->workload == WL_SEQWRITE, NULL, rw_done_cb);
		} else {
			if (b->sent >= b->planned)
				break;
			uint64_t slots = b->size_bytes > b->block_bytes
				? (b->size_bytes - b->block_bytes) / b->align_bytes + 1 : 1;
			uint64_t off = prng_below(b, slots) * b->align_bytes;
			bool is_write = o->workload == WL_RANDWRITE;
			if (o->workload == WL_RANDRW)
				is_write = (double)(splitmix64(&b->prng) >> 11) / 9007199254740992.0 >=
					   o->read_ratio;
			send_call(b, off, b->block_bytes, is_write, NULL, rw_done_cb);
		}
	}
	if (b->in_flight == 0 && !b->done)
		finish(b);
}

/* ---- summary --------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* nearest-rank percentile of sorted samples, in microseconds */
static double percentile_us(const uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)v[rank - 1] / 1000.0;
}

static void print_summary(struct bench *b)
{
	qsort(b->lat_ns, b->nlat, sizeof(*b->lat_ns), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < b->nlat; i++)
		sum += (double)b->lat_ns[i];
	double secs = (double)(b->t_end_ns - b->t_start_ns) / 1e9;
	double mean_us = b->nlat ? sum / (double)b->nlat / 1000.0 : 0;
	double p50 = percentile_us(b->lat_ns, b->nlat, 50), p95 = percentile_us(b->lat_ns, b->nlat, 95);
	double p99 = percentile_us(b->lat_ns, b->nlat, 99);
	double max = b->nlat ? (double)b->lat_ns[b->nlat - 1] / 1000.0 : 0;
	uint64_t requests = b->reads + b->writes;
	if (b->walk != NULL) {
		requests = 0;
		for (int i = 0; i < WP_N; i++)
			requests += b->walk->calls[i];
	}
	double mb_s = secs > 0 ? (double)b->bytes / 1e6 / secs : 0;
	double iops = secs > 0 ? (double)requests / secs : 0;
	const char *wl = workload_names[b->o->workload];

	if (b->o->json) {
		printf("{\"workload\":\"%s\",\"block\":%" PRIu64 ",\"requests\":%" PRIu64
		       ",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"seconds\":%.6f,\"mb_s\":%.3f,\"iops\":%.1f,"
		       "\"lat_us\":{\"p50\":%.1f,\"p95\":%.1f,\"p99\":%.1f,\"max\":%.1f,\"mean\":%.1f},"
		       "\"errors\":%" PRIu64,
		       wl, b->block_bytes, requests, b->reads, b->writes, b->bytes, secs, mb_s, iops,
		       p50, p95, p99, max, mean_us, b->errors);
		if (b->walk != NULL) {
			const struct walk *w = b->walk;
			printf(",\"calls\":{");
			for (int i = 0; i < WP_N; i++)
				printf("%s\"%s\":%" PRIu64, i ? "," : "", walk_proc_names[i], w->calls[i]);
			printf("},\"dirs\":%zu,\"files\":%zu,\"files_walked\":%zu,\"entries\":%" PRIu64
			       ",\"setup_ms\":%.1f", w->next_dir, w->nfiles, w->next_file, w->entries,
			       (double)w->setup_ns / 1e6);
		}
		printf("}\n");
		return;
	}
	printf("workload: %s\nblock: %" PRIu64 "\nrequests: %" PRIu64 "\nreads: %" PRIu64
	       "\nwrites: %" PRIu64 "\nbytes: %" PRIu64 "\nseconds: %.6f\nmb_s: %.3f\n"
	       "iops: %.1f\nlat_us_p50: %.1f\nlat_us_p95: %.1f\nlat_us_p99: %.1f\n"
	       "lat_us_max: %.1f\nlat_us_mean: %.1f\nerrors: %" PRIu64 "\n",
	       wl, b->block_bytes, requests, b->reads, b->writes, b->bytes, secs, mb_s, iops,
	       p50, p95, p99, max, mean_us, b->errors);
	if (b->walk != NULL) {
		const struct walk *w = b->walk;
		for (int i = 0; i < WP_N; i++)
			printf("calls_%s: %" PRIu64 "\n", walk_proc_names[i], w->calls[i]);
		printf("dirs: %zu\nfiles: %zu\nfiles_walked: %zu\nentries: %" PRIu64 "\nsetup_ms: %.1f\n",
		       w->next_dir, w->nfiles, w->next_file, w->entries, (double)w->setup_ns / 1e6);
	}
}

/* ---- command line ------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nfsbench [options] URL\n"
		"  URL  nfs://HOST/EXPORT/PATH?version=3&nfsport=P&mountport=M\n"
		"       (the export is found by mounting the longest parent directory\n"
		"        of PATH that the server accepts)\n"
		"  -w WORKLOAD  seqread|seqwrite|randread|randwrite|randrw|tree|walk\n"
		"               (default seqread)\n"
		"  -b SIZE      block size, k/M/G suffixes (default 1M for seq*, 4k otherwise)\n"
		"  -s SIZE      seqread: bytes to read; seqwrite: bytes to write; rand*: range\n"
		"               of offsets (default: the file's size)\n"
		"  -n N         rand*: requests (default size/block); walk: files at most\n"
		"  -j N         calls in flight (default 1); tree: files read at once;\n"
		"               walk: directories and files worked on at once\n"
		"  -r RATIO     randrw: fraction of reads (default 0.5)\n"
		"  -a ALIGN     rand*: offset alignment (default the block size)\n"
		"  -S SEED      PRNG seed for offsets and write data (default 1)\n"
		"  -c           writes: create/truncate the file first (O_CREAT|O_TRUNC)\n"
		"  -u           writes UNSTABLE and one COMMIT at the end, timed (default)\n"
		"  -F           writes FILE_SYNC: the file opened with O_SYNC, no COMMIT\n"
		"  -l LISTFILE  tree: paths relative to the URL's PATH, one a line; each\n"
		"               file read whole in -b blocks, one READ in flight per file\n"
		"  -N           walk: no READs, metadata calls only\n"
		"  walk: the directory PATH and everything below it, as a client with no\n"
		"       cache of its own: READDIRPLUS of each directory (every page), then\n"
		"       per file LOOKUP, ACCESS, GETATTR and READs (-b) to its end; raw\n"
		"       NFSv3 calls after an untimed MNT and LOOKUPs down to PATH.  The\n"
		"       summary adds the calls per procedure and what was found.\n"
		"  --json       one JSON object on stdout instead of key: value lines\n"
		"Latency is per READ/WRITE call (walk: per call), send to callback.  A failed call is not\n"
		"retried and nothing new is sent after it (no COMMIT either): the calls in\n"
		"flight end, the summary is printed, the first error goes to stderr.\n"
		"Exit 0 when every call succeeded, 1 otherwise, 2 on usage errors.\n");
}

/* bytes with an optional k/M/G (binary) suffix; 0 on error */
static uint64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return 0;
	unsigned shift = 0;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return 0;
	}
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return 0;
	return (uint64_t)v << shift;
}

static int parse_workload(const char *s, enum workload *w)
{
	for (size_t i = 0; i < sizeof(workload_names) / sizeof(workload_names[0]); i++) {
		if (strcmp(s, workload_names[i]) == 0) {
			*w = (enum workload)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Returns 0, 1 after --help, or -EINVAL (a message printed). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct opts){ .workload = WL_SEQREAD, .depth = 1, .read_ratio = 0.5, .seed = 1 };
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "w:b:s:n:j:r:a:S:cuFl:Nh", longopts, NULL)) != -1) {
		bool bad = false;
		switch (c) {
		case 'w': bad = parse_workload(optarg, &o->workload) < 0; break;
		case 'b': bad = (o->block_bytes = parse_size(optarg)) == 0; break;
		case 's': bad = (o->size_bytes = parse_size(optarg)) == 0; break;
		case 'n':
			o->requests = strtoull(optarg, &end, 10);
			bad = *end != '\0' || o->requests == 0;
			break;
		case 'j': {
			unsigned long v = strtoul(optarg, &end, 10);
			bad = *end != '\0' || v == 0 || v > 65536;
			o->depth = (unsigned)v;
			break;
		}
		case 'r':
			o->read_ratio = strtod(optarg, &end);
			bad = *end != '\0' || !(o->read_ratio >= 0 && o->read_ratio <= 1);
			break;
		case 'a': bad = (o->align_bytes = parse_size(optarg)) == 0; break;
		case 'S':
			o->seed = strtoull(optarg, &end, 0);
			bad = *end != '\0';
			break;
		case 'c': o->create = true; break;
		case 'u': o->file_sync = false; break;
		case 'F': o->file_sync = true; break;
		case 'l': o->list_path = optarg; break;
		case 'N': o->no_read = true; break;
		case 'J': o->json = true; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
		if (bad) {
			fprintf(stderr, "nfsbench: -%c: bad value: %s\n", c, optarg);
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return -EINVAL;
	}
	o->url = argv[optind];
	if (o->workload == WL_TREE && o->list_path == NULL) {
		fprintf(stderr, "nfsbench: tree needs -l LISTFILE\n");
		return -EINVAL;
	}
	return 0;
}

static void bench_free(struct bench *b)
{
	/* first: destroying the context calls back the calls still queued */
	if (b->nfs != NULL) {
		if (b->fh != NULL)
			nfs_close(b->nfs, b->fh);
		nfs_destroy_context(b->nfs);
	}
	for (size_t i = 0; i < b->nfiles; i++)
		free(b->files[i].path);
	free(b->files);
	free(b->dir);
	free(b->lat_ns);
	free(b->first_error);
	walk_free(b->walk);
}

/* the timed phase; returns 0 or -EIO when the context failed */
static int bench_run(struct bench *b)
{
	const struct opts *o = b->o;
	b->t_start_ns = now_ns();
	int rc;
	if (o->workload == WL_WALK) {
		walk_add_dir(b->walk, &b->walk->root);
		walk_next(b->walk);
		rc = rpc_loop_until(b->walk->rpc, &b->done);
		if (rc < 0) {
			b->t_end_ns = now_ns();
			record_error(b, "connection", -EIO, rpc_get_error(b->walk->rpc));
		}
		return rc;
	}
	if (o->workload == WL_TREE)
		tree_next_file(b);
	else
		issue_more(b);
	rc = loop_until(b, &b->done);
	if (rc < 0) {
		/* the context failed as a whole: the calls in flight are lost */
		b->t_end_ns = now_ns();
		uint64_t lost = b->in_flight ? b->in_flight : 1;
		record_error(b, "connection", -EIO, nfs_get_error(b->nfs));
		b->errors += lost - 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;

	bool seq = o.workload == WL_SEQREAD || o.workload == WL_SEQWRITE || o.workload == WL_WALK;
	struct bench b = {
		.o = &o,
		.block_bytes = o.block_bytes ? o.block_bytes : seq ? 1u << 20 : 4096,
		.prng = o.seed,
	};
	uint64_t key_state = o.seed ^ 0x5bd1e9955bd1e995u;
	b.pattern_key = splitmix64(&key_state);
	b.align_bytes = o.align_bytes ? o.align_bytes : b.block_bytes;

	int status = 1;
	if (o.workload == WL_TREE && tree_load_list(&b) < 0)
		goto out;
	if (o.workload == WL_WALK) {
		b.walk = xmalloc(sizeof(*b.walk));
		*b.walk = (struct walk){ .b = &b };
		if (walk_setup(&b) < 0)
			goto out;
	} else if (bench_mount(&b) < 0) {
		goto out;
	}
	if (o.workload != WL_TREE && o.workload != WL_WALK && bench_open(&b) < 0)
		goto out;
	if (o.workload != WL_TREE && o.workload != WL_WALK && !seq)
		b.planned = o.requests ? o.requests : b.size_bytes / b.block_bytes;
	rc = bench_run(&b);
	print_summary(&b);
	if (b.first_error != NULL)
		fprintf(stderr, "nfsbench: %" PRIu64 " errors, the first: %s\n", b.errors,
			b.first_error);
	status = rc == 0 && b.errors == 0 ? 0 : 1;
out:
	bench_free(&b);
	return status;
}

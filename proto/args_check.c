/*
 * args_check.c — a skip-only walk over NFSv3/MOUNTv3 argument structures,
 * field by field as RFC 1813 lays them out, with every length bounded.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/args_check.h"
#include "proto/xdr_util.h"

struct walk {
	struct xdr_cursor c;
	int bad;
	int nul_in_path;   /* a SYMLINK target holds a NUL byte */
};

static uint32_t u32(struct walk *w)
{
	uint32_t v = 0;

	if (!w->bad && !xdr_get_u32(&w->c, &v))
		w->bad = 1;
	return v;
}

static void skip(struct walk *w, size_t n)
{
	if (w->bad)
		return;
	if (xdr_remaining(&w->c) < n)
		w->bad = 1;
	else
		w->c.pos += n;
}

static uint32_t opaque(struct walk *w, uint32_t max)
{
	const uint8_t *data;
	uint32_t len = 0;

	if (!w->bad && !xdr_get_opaque(&w->c, max, &data, &len))
		w->bad = 1;
	return len;
}

/* A filename3 or dirpath: libnfs keeps it as a C string, so a NUL inside
 * would reach the upstream as a shorter, different name: refused.  A
 * filename3 (`component` 1) is one component: knfsd's decoder
 * (svcxdr_decode_filename3) refuses a '/' in it as well, and so does this,
 * whatever the upstream would make of "../..". */
static void name(struct walk *w, uint32_t max, int component)
{
	const uint8_t *data;
	uint32_t len = 0;

	if (!w->bad && !xdr_get_opaque(&w->c, max, &data, &len))
		w->bad = 1;
	else if (!w->bad && (memchr(data, 0, len) || (component && memchr(data, '/', len))))
		w->bad = 1;
}

static void fh(struct walk *w) { opaque(w, NFS3_FHSIZE_MAX); }
static void u64(struct walk *w) { skip(w, 8); }

static void boolean(struct walk *w, int then_bytes)
{
	uint32_t b = u32(w);

	if (b > 1)
		w->bad = 1;
	else if (b)
		skip(w, then_bytes);
}

static void time_how(struct walk *w)
{
	uint32_t how = u32(w);   /* DONT_CHANGE, SET_TO_SERVER_TIME, SET_TO_CLIENT_TIME */

	if (how > 2)
		w->bad = 1;
	else if (how == 2)
		skip(w, 8);           /* nfstime3 */
}

static void sattr3(struct walk *w)
{
	boolean(w, 4);   /* mode */
	boolean(w, 4);   /* uid */
	boolean(w, 4);   /* gid */
	boolean(w, 8);   /* size */
	time_how(w);     /* atime */
	time_how(w);     /* mtime */
}

static void diropargs3(struct walk *w)
{
	fh(w);
	/* a name longer than NFS3_NAME_MAX is the upstream's to refuse with
	 * NFS3ERR_NAMETOOLONG, as an empty one is; only absurd lengths stop here */
	name(w, NFS3_NAME_WIRE_MAX, 1);
}

/* A SYMLINK's target (nfspath3): well-formed with a NUL inside, but no
 * file system takes it; knfsd answers NFS3ERR_INVAL
 * (svc_fill_symlink_pathname). */
static void symlink_data(struct walk *w)
{
	const uint8_t *data;
	uint32_t len = 0;

	if (!w->bad && !xdr_get_opaque(&w->c, NFS3_SYMLINK_WIRE_MAX, &data, &len))
		w->bad = 1;
	else if (!w->bad && memchr(data, 0, len))
		w->nul_in_path = 1;
}

static int check_nfs3(struct walk *w, uint32_t proc, uint32_t max_write)
{
	switch (proc) {
	case 0:  /* NULL */
		break;
	case 1:  /* GETATTR */
	case 5:  /* READLINK */
	case 18: /* FSSTAT */
	case 19: /* FSINFO */
	case 20: /* PATHCONF */
		fh(w);
		break;
	case 2:  /* SETATTR */
		fh(w);
		sattr3(w);
		boolean(w, 8);   /* guard: obj_ctime */
		break;
	case 3:  /* LOOKUP */
	case 12: /* REMOVE */
	case 13: /* RMDIR */
		diropargs3(w);
		break;
	case 4:  /* ACCESS */
		fh(w);
		u32(w);
		break;
	case 6:  /* READ */
	case 21: /* COMMIT */
		fh(w);
		u64(w);
		u32(w);
		break;
	case 7: { /* WRITE */
		fh(w);
		u64(w);
		uint32_t count = u32(w);
		uint32_t stable = u32(w);
		if (stable > 2)
			w->bad = 1;
		/* a count that disagrees with the data's length is the
		 * upstream's to judge (knfsd: GARBAGE_ARGS; nfs-ganesha:
		 * NFS3ERR_INVAL above it, count bytes written below it), but
		 * not one above what a WRITE may carry: libnfs sizes the call
		 * it sends upstream by it (knfsd refuses it too) */
		if (count > max_write)
			w->bad = 1;
		opaque(w, max_write);
		break;
	}
	case 8: { /* CREATE */
		diropargs3(w);
		uint32_t mode = u32(w);   /* UNCHECKED, GUARDED, EXCLUSIVE */
		if (mode > 2)
			w->bad = 1;
		else if (mode == 2)
			skip(w, 8);   /* createverf3 */
		else
			sattr3(w);
		break;
	}
	case 9:  /* MKDIR */
		diropargs3(w);
		sattr3(w);
		break;
	case 10: /* SYMLINK */
		diropargs3(w);
		sattr3(w);
		symlink_data(w);
		break;
	case 11: { /* MKNOD */
		diropargs3(w);
		uint32_t type = u32(w);
		if (type < 1 || type > 7)
			w->bad = 1;
		else if (type == 3 || type == 4) {   /* NF3BLK, NF3CHR */
			sattr3(w);
			skip(w, 8);                  /* specdata3 */
		} else if (type == 6 || type == 7) { /* NF3SOCK, NF3FIFO */
			sattr3(w);
		}
		break;
	}
	case 14: /* RENAME */
		diropargs3(w);
		diropargs3(w);
		break;
	case 15: /* LINK */
		fh(w);
		diropargs3(w);
		break;
	case 16: /* READDIR */
		fh(w);
		u64(w);
		skip(w, 8);
		u32(w);
		break;
	case 17: /* READDIRPLUS */
		fh(w);
		u64(w);
		skip(w, 8);
		u32(w);
		u32(w);
		break;
	default:
		return -ENOSYS;
	}
	return 0;
}

static int check_mount3(struct walk *w, uint32_t proc)
{
	switch (proc) {
	case 0: /* NULL */
	case 2: /* DUMP */
	case 4: /* UMNTALL */
	case 5: /* EXPORT */
		break;
	case 1: /* MNT */
	case 3: /* UMNT */
		name(w, NFS3_PATH_MAX, 0);
		break;
	default:
		return -ENOSYS;
	}
	return 0;
}

int args_check(uint32_t prog, uint32_t proc, const uint8_t *args, size_t len,
	       uint32_t max_write)
{
	struct walk w = { .bad = 0 };
	int rc;

	xdr_cursor_init(&w.c, args, len);
	if (prog == NFS3_PROGRAM)
		rc = check_nfs3(&w, proc, max_write);
	else if (prog == MOUNT_PROGRAM)
		rc = check_mount3(&w, proc);
	else
		rc = -ENOSYS;
	if (rc)
		return rc;
	if (w.bad)
		return -EBADMSG;
	return w.nul_in_path ? -EILSEQ : 0;
}

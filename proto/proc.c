/*
 * proc.c — the NFSv3 and MOUNTv3 procedure table and the small typed shims
 * that adapt libnfs's per-type XDR and rpc_*_async functions to one shape.
 */
#include "config.h"

#include "proto/limits.h"
#include "proto/proc.h"

_Static_assert(NFS3_FHSIZE_MAX == NFS3_FHSIZE, "the handle bound is libnfs's");

#define XDR_SHIMS(T) \
	static uint32_t dec_##T##args(ZDR *z, void *o) { return zdr_##T##args(z, o); } \
	static uint32_t enc_##T##res(ZDR *z, void *o) { return zdr_##T##res(z, o); }

#define SEND_SHIM(T, fn) \
	static int send_##T(struct rpc_context *r, rpc_cb cb, void *a, void *p) \
	{ return rpc_nfs3_##fn##_async(r, cb, a, p); }

/* one block per procedure with arguments and a result */
XDR_SHIMS(GETATTR3) SEND_SHIM(GETATTR3, getattr)
XDR_SHIMS(SETATTR3) SEND_SHIM(SETATTR3, setattr)
XDR_SHIMS(LOOKUP3) SEND_SHIM(LOOKUP3, lookup)
XDR_SHIMS(ACCESS3) SEND_SHIM(ACCESS3, access)
XDR_SHIMS(READLINK3) SEND_SHIM(READLINK3, readlink)
XDR_SHIMS(READ3) SEND_SHIM(READ3, read)
XDR_SHIMS(WRITE3) SEND_SHIM(WRITE3, write)
XDR_SHIMS(CREATE3) SEND_SHIM(CREATE3, create)
XDR_SHIMS(MKDIR3) SEND_SHIM(MKDIR3, mkdir)
XDR_SHIMS(SYMLINK3) SEND_SHIM(SYMLINK3, symlink)
XDR_SHIMS(MKNOD3) SEND_SHIM(MKNOD3, mknod)
XDR_SHIMS(REMOVE3) SEND_SHIM(REMOVE3, remove)
XDR_SHIMS(RMDIR3) SEND_SHIM(RMDIR3, rmdir)
XDR_SHIMS(RENAME3) SEND_SHIM(RENAME3, rename)
XDR_SHIMS(LINK3) SEND_SHIM(LINK3, link)
XDR_SHIMS(READDIR3) SEND_SHIM(READDIR3, readdir)
XDR_SHIMS(READDIRPLUS3) SEND_SHIM(READDIRPLUS3, readdirplus)
XDR_SHIMS(FSSTAT3) SEND_SHIM(FSSTAT3, fsstat)
XDR_SHIMS(FSINFO3) SEND_SHIM(FSINFO3, fsinfo)
XDR_SHIMS(PATHCONF3) SEND_SHIM(PATHCONF3, pathconf)
XDR_SHIMS(COMMIT3) SEND_SHIM(COMMIT3, commit)

static int send_NULL3(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	(void)a;
	return rpc_nfs3_null_async(r, cb, p);
}

/* MOUNTv3 */
static uint32_t dec_dirpath(ZDR *z, void *o) { return zdr_dirpath(z, o); }
static uint32_t enc_mountres3(ZDR *z, void *o) { return zdr_mountres3(z, o); }
static uint32_t enc_mountlist(ZDR *z, void *o) { return zdr_mountlist(z, o); }
static uint32_t enc_exports(ZDR *z, void *o) { return zdr_exports(z, o); }

static int send_MNT(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	return rpc_mount3_mnt_async(r, cb, *(dirpath *)a, p);
}
static int send_UMNT(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	return rpc_mount3_umnt_async(r, cb, *(dirpath *)a, p);
}
static int send_MOUNT_NULL(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	(void)a;
	return rpc_mount3_null_async(r, cb, p);
}
static int send_DUMP(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	(void)a;
	return rpc_mount3_dump_async(r, cb, p);
}
static int send_UMNTALL(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	(void)a;
	return rpc_mount3_umntall_async(r, cb, p);
}
static int send_EXPORT(struct rpc_context *r, rpc_cb cb, void *a, void *p)
{
	(void)a;
	return rpc_mount3_export_async(r, cb, p);
}

#define NFS3(num, NAME, T, flags) \
	[num] = { NFS3_PROGRAM, NFS3_VERSION, num, NAME, flags, dec_##T##args, sizeof(T##args), \
		  enc_##T##res, sizeof(T##res), send_##T }

#define NI PROC_NONIDEMPOTENT

static const struct proc_desc nfs3_procs[NFS3_PROC_COUNT] = {
	[0] = { NFS3_PROGRAM, NFS3_VERSION, 0, "NULL", 0, NULL, 0, NULL, 0, send_NULL3 },
	NFS3(1, "GETATTR", GETATTR3, 0),
	NFS3(2, "SETATTR", SETATTR3, NI),
	NFS3(3, "LOOKUP", LOOKUP3, 0),
	NFS3(4, "ACCESS", ACCESS3, 0),
	NFS3(5, "READLINK", READLINK3, 0),
	NFS3(6, "READ", READ3, 0),
	NFS3(7, "WRITE", WRITE3, NI),
	NFS3(8, "CREATE", CREATE3, NI),
	NFS3(9, "MKDIR", MKDIR3, NI),
	NFS3(10, "SYMLINK", SYMLINK3, NI),
	NFS3(11, "MKNOD", MKNOD3, NI),
	NFS3(12, "REMOVE", REMOVE3, NI),
	NFS3(13, "RMDIR", RMDIR3, NI),
	NFS3(14, "RENAME", RENAME3, NI),
	NFS3(15, "LINK", LINK3, NI),
	NFS3(16, "READDIR", READDIR3, 0),
	NFS3(17, "READDIRPLUS", READDIRPLUS3, 0),
	NFS3(18, "FSSTAT", FSSTAT3, 0),
	NFS3(19, "FSINFO", FSINFO3, 0),
	NFS3(20, "PATHCONF", PATHCONF3, 0),
	NFS3(21, "COMMIT", COMMIT3, 0),
};

#define MNT(num, NAME, dec, asz, enc, rsz, send) \
	[num] = { MOUNT_PROGRAM, MOUNT3_VERSION, num, NAME, 0, dec, asz, enc, rsz, send }

static const struct proc_desc mount3_procs[MOUNT3_PROC_COUNT] = {
	MNT(0, "NULL", NULL, 0, NULL, 0, send_MOUNT_NULL),
	MNT(1, "MNT", dec_dirpath, sizeof(dirpath), enc_mountres3, sizeof(mountres3), send_MNT),
	MNT(2, "DUMP", NULL, 0, enc_mountlist, sizeof(mountlist), send_DUMP),
	MNT(3, "UMNT", dec_dirpath, sizeof(dirpath), NULL, 0, send_UMNT),
	MNT(4, "UMNTALL", NULL, 0, NULL, 0, send_UMNTALL),
	MNT(5, "EXPORT", NULL, 0, enc_exports, sizeof(exports), send_EXPORT),
};

const struct proc_desc *proc_lookup(uint32_t prog, uint32_t vers, uint32_t proc,
				    enum proc_lookup_status *why, uint32_t *low, uint32_t *high)
{
	const struct proc_desc *table;
	uint32_t count, version;

	if (prog == NFS3_PROGRAM) {
		table = nfs3_procs;
		count = NFS3_PROC_COUNT;
		version = NFS3_VERSION;
	} else if (prog == MOUNT_PROGRAM) {
		table = mount3_procs;
		count = MOUNT3_PROC_COUNT;
		version = MOUNT3_VERSION;
	} else {
		*why = PROC_PROG_UNAVAIL;
		return NULL;
	}
	if (vers != version) {
		*why = PROC_PROG_MISMATCH;
		*low = *high = version;
		return NULL;
	}
	if (proc >= count) {
		*why = PROC_PROC_UNAVAIL;
		return NULL;
	}
	*why = PROC_FOUND;
	return &table[proc];
}

const struct proc_desc *proc_nfs3(uint32_t proc)
{
	enum proc_lookup_status why;
	uint32_t lo, hi;

	return proc_lookup(NFS3_PROGRAM, NFS3_VERSION, proc, &why, &lo, &hi);
}

/*
 * proc.h — the procedure table: (program, version, procedure) → name, flags,
 * libnfs XDR routines for arguments and results, and the libnfs call that
 * forwards it upstream (nfs-ganesha nfs3_func_desc[]).  The handlers that
 * answer each procedure are the daemon's (daemon/procs.c), indexed by the
 * same procedure numbers.
 * NFSv3 (RFC 1813 §3.3) and MOUNTv3 (RFC 1813 §5.2), one type family: the
 * decoded argument structs are libnfs's, passed to rpc_nfs3_*_async as they
 * are, and its result structs are encoded back to the client as they are.
 */
#ifndef NFSCACHED_PROC_H
#define NFSCACHED_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "proto/nfs.h"
#include "proto/args_check.h"

#define NFS3_VERSION 3
#define MOUNT3_VERSION 3

#define NFS3_PROC_COUNT 22
#define MOUNT3_PROC_COUNT 6

/* NFSv3 procedure numbers (RFC 1813 §3.3). */
enum {
	NFS3PROC_NULL = 0, NFS3PROC_GETATTR = 1, NFS3PROC_SETATTR = 2, NFS3PROC_LOOKUP = 3,
	NFS3PROC_ACCESS = 4, NFS3PROC_READLINK = 5, NFS3PROC_READ = 6, NFS3PROC_WRITE = 7,
	NFS3PROC_CREATE = 8, NFS3PROC_MKDIR = 9, NFS3PROC_SYMLINK = 10, NFS3PROC_MKNOD = 11,
	NFS3PROC_REMOVE = 12, NFS3PROC_RMDIR = 13, NFS3PROC_RENAME = 14, NFS3PROC_LINK = 15,
	NFS3PROC_READDIR = 16, NFS3PROC_READDIRPLUS = 17, NFS3PROC_FSSTAT = 18,
	NFS3PROC_FSINFO = 19, NFS3PROC_PATHCONF = 20, NFS3PROC_COMMIT = 21,
};
enum {
	MOUNT3PROC_NULL = 0, MOUNT3PROC_MNT = 1, MOUNT3PROC_DUMP = 2, MOUNT3PROC_UMNT = 3,
	MOUNT3PROC_UMNTALL = 4, MOUNT3PROC_EXPORT = 5,
};

#define NFS3ERR_JUKEBOX_STATUS 10008
#define NFS3ERR_INVAL_STATUS 22
#define MNT3ERR_ACCES_STATUS 13

/* XDR routine over a libnfs memory stream; returns nonzero on success. */
typedef uint32_t (*proc_xdr_fn)(ZDR *zdr, void *obj);

/* Queue the call upstream on `rpc`; libnfs's contract: 0 and `cb` fires once
 * later, or <0 and it never fires. */
typedef int (*proc_send_fn)(struct rpc_context *rpc, rpc_cb cb, void *args, void *priv);

#define PROC_NONIDEMPOTENT 0x1   /* replays are answered from the DRC */

struct proc_desc {
	uint32_t prog, vers, proc;
	const char *name;            /* upper-case RFC 1813 name */
	unsigned flags;              /* PROC_* */
	proc_xdr_fn decode_args;     /* NULL: void arguments */
	size_t args_size;            /* bytes of the libnfs argument struct */
	proc_xdr_fn encode_res;      /* NULL: void result */
	size_t res_size;             /* bytes of the libnfs result struct */
	proc_send_fn send;
};

enum proc_lookup_status {
	PROC_FOUND = 0,
	PROC_PROG_UNAVAIL,
	PROC_PROG_MISMATCH,   /* *low..*high are the versions served */
	PROC_PROC_UNAVAIL,
};

/*
 * Find the table entry for a call.  Returns it, or NULL with *why set (and
 * *low, *high for PROC_PROG_MISMATCH).
 */
const struct proc_desc *proc_lookup(uint32_t prog, uint32_t vers, uint32_t proc,
				    enum proc_lookup_status *why, uint32_t *low, uint32_t *high);

/* The table entry of NFSv3 procedure `proc` (RFC 1813 §3.3); never NULL for
 * 0..21 (the daemon's own calls upstream use it). */
const struct proc_desc *proc_nfs3(uint32_t proc);

#endif

/*
 * procs.c — the dispatch table: for each NFSv3 and MOUNTv3 procedure of
 * proto/proc.c's table, the handler that answers it and the function that
 * releases what the handler holds for the call (nfs-ganesha
 * nfs3_func_desc[], whose rows name the service function and its free
 * function).  Indexed by the RFC 1813 procedure numbers.
 */
#include "config.h"

#include <assert.h>

#include "common/macros.h"
#include "daemon/handlers.h"
#include "proto/proc.h"

static const struct nfsd_proc nfs3_table[] = {
	[NFS3PROC_NULL] = { nfsd_proc_null, NULL },
	[NFS3PROC_GETATTR] = { nfsd_proc_getattr, nfsd_call_state_free },
	[NFS3PROC_SETATTR] = { nfsd_proc_setattr, nfsd_call_state_free },
	[NFS3PROC_LOOKUP] = { nfsd_proc_lookup, nfsd_call_state_free },
	[NFS3PROC_ACCESS] = { nfsd_proc_access, nfsd_call_state_free },
	[NFS3PROC_READLINK] = { nfsd_proc_readlink, nfsd_call_state_free },
	[NFS3PROC_READ] = { nfsd_proc_read, nfsd_call_state_free },
	[NFS3PROC_WRITE] = { nfsd_proc_write, nfsd_call_state_free },
	[NFS3PROC_CREATE] = { nfsd_proc_made, nfsd_call_state_free },
	[NFS3PROC_MKDIR] = { nfsd_proc_made, nfsd_call_state_free },
	[NFS3PROC_SYMLINK] = { nfsd_proc_made, nfsd_call_state_free },
	[NFS3PROC_MKNOD] = { nfsd_proc_made, nfsd_call_state_free },
	[NFS3PROC_REMOVE] = { nfsd_proc_remove, nfsd_call_state_free },
	[NFS3PROC_RMDIR] = { nfsd_proc_rmdir, nfsd_call_state_free },
	[NFS3PROC_RENAME] = { nfsd_proc_rename, nfsd_call_state_free },
	[NFS3PROC_LINK] = { nfsd_proc_link, nfsd_call_state_free },
	[NFS3PROC_READDIR] = { nfsd_proc_readdir, nfsd_call_state_free },
	[NFS3PROC_READDIRPLUS] = { nfsd_proc_readdir, nfsd_call_state_free },
	[NFS3PROC_FSSTAT] = { nfsd_proc_fs, nfsd_call_state_free },
	[NFS3PROC_FSINFO] = { nfsd_proc_fs, nfsd_call_state_free },
	[NFS3PROC_PATHCONF] = { nfsd_proc_fs, nfsd_call_state_free },
	[NFS3PROC_COMMIT] = { nfsd_proc_commit, nfsd_call_state_free },
};
_Static_assert(ARRAY_SIZE(nfs3_table) == NFS3_PROC_COUNT, "one row per NFSv3 procedure");

static const struct nfsd_proc mount3_table[] = {
	[MOUNT3PROC_NULL] = { nfsd_proc_null, NULL },
	[MOUNT3PROC_MNT] = { nfsd_proc_mnt, nfsd_call_state_free },
	[MOUNT3PROC_DUMP] = { nfsd_proc_forward, NULL },
	[MOUNT3PROC_UMNT] = { nfsd_proc_forward, NULL },
	[MOUNT3PROC_UMNTALL] = { nfsd_proc_forward, NULL },
	[MOUNT3PROC_EXPORT] = { nfsd_proc_export, nfsd_call_state_free },
};
_Static_assert(ARRAY_SIZE(mount3_table) == MOUNT3_PROC_COUNT, "one row per MOUNTv3 procedure");

const struct nfsd_proc *nfsd_proc_of(const struct proc_desc *desc)
{
	const struct nfsd_proc *p = NULL;

	if (desc->prog == NFS3_PROGRAM && desc->proc < NFS3_PROC_COUNT)
		p = &nfs3_table[desc->proc];
	else if (desc->prog == MOUNT_PROGRAM && desc->proc < MOUNT3_PROC_COUNT)
		p = &mount3_table[desc->proc];
	assert(p && p->handler);   /* proc_lookup() found it: the row exists */
	return p;
}

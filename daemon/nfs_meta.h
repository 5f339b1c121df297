/*
 * nfs_meta.h — what the namespace cache's procedure handlers share: those
 * that answer from it (nfs_meta.c) and those that keep a directory's names
 * right after a change made through nfscached (nfs_names.c).  Nothing else
 * includes it.
 */
#ifndef NFSCACHED_NFS_META_H
#define NFSCACHED_NFS_META_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/meta.h"
#include "daemon/nfs_common.h"
#include "proto/limits.h"
#include "proto/nfs.h"

struct nfsd_call;

/* A handler's namespace-cache state for its call (nfsd_call_state()->meta). */
struct nfsd_meta_op {
	struct nfsd_call *call;
	struct meta_waiter waiter;      /* GETATTR: waiting for the one in flight */
	bool joined;                    /* waited once already: forward next */
	bool getattr_begun;             /* this call's GETATTR is the node's one in flight */
	bool access_asked;              /* our own ACCESS went: forward next */
	bool revalidated;               /* a directory's GETATTR went (or was waited for) */
	void (*retry)(struct nfsd_call *call);   /* after our own ACCESS or GETATTR */
	GETATTR3args getattr;           /* our own GETATTR of a directory */
	uint64_t getattr_mseq;          /* meta_seq() when it was sent */
	LOOKUP3args lookup;             /* our own LOOKUP of a name about to go */
	uint64_t lookup_mseq;
	uint8_t found[NFS3_FHSIZE_MAX]; /* ... the handle it found */
	uint32_t found_len;             /* 0: none */
	uint32_t found_nlink;           /* its link count then; 0 = unknown */
	struct nfsd_access access;      /* our own ACCESS of the directory */
	uint64_t access_mseq;           /* meta_seq() when it was sent */
	uint8_t fh[NFS3_FHSIZE_MAX];    /* the GETATTR's handle (until meta_getattr_end) */
	uint32_t fh_len;
};

/* The call's state, created (zeroed) on first use; never NULL.  Released
 * with the call (nfsd_meta_op_free()). */
struct nfsd_meta_op *nfsd_meta_op_of(struct nfsd_call *call);

/* meta_seq() when the call was forwarded. */
uint64_t nfsd_meta_mseq(struct nfsd_call *call);

/* Attributes `pa` of `fh` in a reply (none: nothing) to the namespace
 * cache, at sequence `mseq`. */
void nfsd_meta_record(const nfs_fh3 *fh, const post_op_attr *pa, uint64_t mseq);

#endif

/*
 * cred.h — the write-back credentials of the cache, one shared copy per
 * distinct credential: every object with uncommitted bytes names the
 * writer whose credential its write-back uses (DESIGN.md "Credentials",
 * "Write-back"), and most of them were written by the same few users, so
 * an object holds a counted reference instead of a copy of its own
 * (struct rpc_cred is 340 bytes: up to 16 groups and a 255-byte machine
 * name).  Single-threaded (the loop); files of cache/ only.
 */
#ifndef NFSCACHED_CRED_H
#define NFSCACHED_CRED_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/rpc_msg.h"

/* Do `a` and `b` name the same credential: flavor, uid, gid, groups and
 * machine name (RFC 5531 §14 AUTH_SYS fields; the stamp is not part of it). */
bool cred_equal(const struct rpc_cred *a, const struct rpc_cred *b);

/*
 * The shared copy of `cred` (equal by cred_equal()), made when it is the
 * first, with one more reference taken for the caller, who gives it back
 * with cred_release().  Never NULL (allocation failure aborts).  The copy
 * keeps the stamp of the first credential interned; it must not be
 * changed.
 */
const struct rpc_cred *cred_intern(const struct rpc_cred *cred);

/* Give back one reference taken by cred_intern(); the copy is freed with
 * its last one.  cred_release(NULL) does nothing. */
void cred_release(const struct rpc_cred *cred);

/* Distinct credentials held now (shared copies alive). */
size_t cred_count(void);

/* Free the table (cache_finalise, once every reference was given back). */
void cred_finalise(void);

#endif

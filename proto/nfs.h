/*
 * nfs.h — the one place that includes libnfs's headers (in the order they
 * need: <sys/time.h> first).  Files that include <rpc/rpc.h> must not include
 * this one: the two define the same types and guards.
 */
#ifndef NFSCACHED_NFS_H
#define NFSCACHED_NFS_H

#include <sys/time.h>
#include <stdint.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-mount.h>

/* Exported by libnfs 4.0 but missing from its installed headers. */
void rpc_set_autoreconnect(struct rpc_context *rpc, int num_retries);

#endif

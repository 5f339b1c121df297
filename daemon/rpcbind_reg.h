/*
 * rpcbind_reg.h — registration of NFS 3 and MOUNT 3 on the listening port
 * with the local rpcbind (server.rpcbind = yes), so that a plain
 * `mount -t nfs -o vers=3,nolock HOST:/export /mnt` finds nfscached.
 * Implemented with libtirpc (rpcb_set, RFC 1833) in a file of its own:
 * <rpc/rpc.h> and libnfs's headers cannot be included together.
 */
#ifndef NFSCACHED_RPCBIND_REG_H
#define NFSCACHED_RPCBIND_REG_H

#include <sys/socket.h>

/*
 * Register NFS 3 and MOUNT 3 over TCP at `addr` (AF_INET or AF_INET6, the
 * bound listening address).  Blocks for as long as rpcbind takes to answer
 * (a local call, at start-up only).  Returns 0, or -EIO after logging when
 * rpcbind cannot be reached or refuses (another server holds the programs);
 * nothing stays registered then.
 */
int rpcbind_register(const struct sockaddr *addr, socklen_t len);

/* Remove what rpcbind_register() registered.  A no-op when nothing is. */
void rpcbind_unregister(void);

#endif

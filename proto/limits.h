/*
 * limits.h — the protocol maxima every layer checks against (RFC 1813 §2.5,
 * §3.3, §5.1), in a header free of libnfs so that the wire checks, the cache
 * index and the daemon name them alike.  proto/proc.c asserts that they
 * agree with libnfs's own constants.
 */
#ifndef NFSCACHED_LIMITS_H
#define NFSCACHED_LIMITS_H

#define NFS3_FHSIZE_MAX 64      /* bytes of a file handle (NFS3_FHSIZE) */
#define NFS3_NAME_MAX 255       /* what servers accept; longer: NFS3ERR_NAMETOOLONG */
#define NFS3_NAME_WIRE_MAX 1024 /* what the proxy passes on; longer: GARBAGE_ARGS */
#define NFS3_PATH_MAX 1024      /* MNTPATHLEN: a MOUNT dirpath */
#define NFS3_SYMLINK_MAX 4096   /* symlink data servers take (Linux NFS3_MAXPATHLEN,
                                 * knfsd's bound); longer: NFS3ERR_NAMETOOLONG */
#define NFS3_SYMLINK_WIRE_MAX 8192 /* what the proxy passes on; longer: GARBAGE_ARGS */

#define NFS3_PROGRAM 100003
#define MOUNT_PROGRAM 100005

#endif

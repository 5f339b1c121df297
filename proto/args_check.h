/*
 * args_check.h — structural validation of NFSv3 and MOUNTv3 call arguments
 * (RFC 1813 §3.3 and §5.2) in the raw record, before libnfs decodes them.
 *
 * libnfs's decoders trust declared lengths (a string or opaque length near
 * 2^32 wraps their bounds check), so every variable-length field is checked
 * here against the protocol maxima and the bytes actually present: file
 * handles <= NFS3_FHSIZE_MAX bytes, names and paths <= 1024, WRITE data <= the
 * configured maximum, as is its `count` (a `count` that differs from the
 * data's length is the upstream's to judge: servers disagree), union
 * discriminants in range.
 * libnfs keeps names and paths as C strings and re-encodes them with
 * strlen(), so one holding a NUL byte would be forwarded altered: such a
 * name (filename3, MOUNT dirpath) is malformed; so is a filename3 holding
 * a '/' (one component, never a path), as knfsd's decoder has it.
 * Pure function of the bytes; no libnfs, no allocation.
 */
#ifndef NFSCACHED_ARGS_CHECK_H
#define NFSCACHED_ARGS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/limits.h"

/*
 * Check the arguments of procedure `proc` of NFS version 3 (`prog` NFS3) or
 * MOUNT version 3 (`prog` MOUNT) in `args` (`len` bytes, everything after the
 * call header).  `max_write` bounds WRITE data, bytes.
 * Returns 0 when the arguments are complete and within bounds; -EBADMSG
 * otherwise (RPC GARBAGE_ARGS: a filename3 or dirpath holding a NUL byte,
 * or a filename3 holding a '/', is one case); -EILSEQ when they are well-formed but a SYMLINK target
 * (nfspath3) holds a NUL byte (NFS3ERR_INVAL, as knfsd answers, RFC 1813
 * §3.3.10); -ENOSYS for a procedure number it does not know.
 */
int args_check(uint32_t prog, uint32_t proc, const uint8_t *args, size_t len,
	       uint32_t max_write);

#endif

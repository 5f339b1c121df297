/*
 * fattr.h — the attributes of a regular file as an upstream would send them
 * (RFC 1813 §2.6 fattr3), for the unit tests that feed the cache: mode 0644,
 * one link, uid 1000, gid 100, `used` = `size`, every time `mtime_s` +
 * `mtime_ns`.
 */
#ifndef NFSCACHED_TEST_FATTR_H
#define NFSCACHED_TEST_FATTR_H

#include <stdint.h>
#include <string.h>

#include "proto/nfs.h"

static inline fattr3 test_fattr3(uint64_t size, uint32_t mtime_s, uint32_t mtime_ns,
				 uint64_t fsid, uint64_t fileid)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.mode = 0644;
	a.nlink = 1;
	a.uid = 1000;
	a.gid = 100;
	a.size = size;
	a.used = size;
	a.fsid = fsid;
	a.fileid = fileid;
	a.atime.seconds = a.mtime.seconds = a.ctime.seconds = mtime_s;
	a.atime.nseconds = a.mtime.nseconds = a.ctime.nseconds = mtime_ns;
	return a;
}

#endif

/*
 * fuzz_args.c — libFuzzer target for the NFSv3 and MOUNTv3 argument check
 * (proto/args_check.c) followed by libnfs's decoders from the procedure
 * table (proto/proc.c), as daemon/call.c runs them (RFC 1813 §3.3, §5.2).
 *
 * Input: one byte choosing the procedure (22 of NFS, then 6 of MOUNT), then
 * the procedure arguments, in a buffer of exactly their size.  When
 * args_check() accepts them, the table's decoder must accept them too, and
 * every length it decoded is touched — each byte of each file handle,
 * name, path and WRITE data read — so that ASan sees any length the check
 * let through that the bytes do not back.  Decoded values must also agree
 * with the bounds the check promises, and encoding them again (as libnfs
 * does to forward them) must give the bytes received: a name is forwarded
 * exactly or refused, never altered.  Then the arguments are freed as the
 * daemon frees them: the decode stream (zdr_destroy), the struct, the buffer.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/args_check.h"
#include "proto/limits.h"
#include "proto/proc.h"
#include "proto/xdr_util.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_WRITE (1024 * 1024)   /* the daemon's default payload bound */

static volatile uint8_t sink;

static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;

	FUZZ_CHECK(n == 0 || p != NULL);
	for (size_t i = 0; i < n; i++)
		sink ^= b[i];
}

static void touch_fh(const nfs_fh3 *fh)
{
	FUZZ_CHECK(fh->data.data_len <= NFS3_FHSIZE_MAX);
	touch(fh->data.data_val, fh->data.data_len);
}

/* A decoded string (filename3, nfspath3, dirpath): NUL-terminated within
 * the bound the check applies to it. */
static void touch_str(const char *s, size_t max)
{
	FUZZ_CHECK(s != NULL);
	size_t n = strlen(s);   /* reads every byte up to the NUL */
	FUZZ_CHECK(n <= max);
	touch(s, n + 1);
}

static void touch_dirop(const diropargs3 *d)
{
	touch_fh(&d->dir);
	touch_str(d->name, NFS3_NAME_WIRE_MAX);
}

static void touch_sattr(const sattr3 *a)
{
	FUZZ_CHECK(a->mode.set_it <= 1 && a->uid.set_it <= 1 && a->gid.set_it <= 1 &&
		   a->size.set_it <= 1);
	FUZZ_CHECK((unsigned)a->atime.set_it <= SET_TO_CLIENT_TIME);
	FUZZ_CHECK((unsigned)a->mtime.set_it <= SET_TO_CLIENT_TIME);
}

static void touch_nfs3(uint32_t proc, void *args)
{
	switch (proc) {
	case NFS3PROC_GETATTR:
		touch_fh(&((GETATTR3args *)args)->object);
		break;
	case NFS3PROC_SETATTR: {
		SETATTR3args *a = args;
		touch_fh(&a->object);
		touch_sattr(&a->new_attributes);
		FUZZ_CHECK(a->guard.check <= 1);
		break;
	}
	case NFS3PROC_LOOKUP:
		touch_dirop(&((LOOKUP3args *)args)->what);
		break;
	case NFS3PROC_ACCESS:
		touch_fh(&((ACCESS3args *)args)->object);
		break;
	case NFS3PROC_READLINK:
		touch_fh(&((READLINK3args *)args)->symlink);
		break;
	case NFS3PROC_READ:
		touch_fh(&((READ3args *)args)->file);
		break;
	case NFS3PROC_WRITE: {
		WRITE3args *a = args;
		touch_fh(&a->file);
		FUZZ_CHECK((unsigned)a->stable <= FILE_SYNC);
		/* count may differ from the data's length: the upstream judges */
		FUZZ_CHECK(a->data.data_len <= FUZZ_MAX_WRITE);
		touch(a->data.data_val, a->data.data_len);
		break;
	}
	case NFS3PROC_CREATE: {
		CREATE3args *a = args;
		touch_dirop(&a->where);
		FUZZ_CHECK((unsigned)a->how.mode <= EXCLUSIVE);
		if (a->how.mode == EXCLUSIVE)
			touch(a->how.createhow3_u.verf, sizeof(a->how.createhow3_u.verf));
		else
			touch_sattr(&a->how.createhow3_u.obj_attributes);
		break;
	}
	case NFS3PROC_MKDIR: {
		MKDIR3args *a = args;
		touch_dirop(&a->where);
		touch_sattr(&a->attributes);
		break;
	}
	case NFS3PROC_SYMLINK: {
		SYMLINK3args *a = args;
		touch_dirop(&a->where);
		touch_sattr(&a->symlink.symlink_attributes);
		touch_str(a->symlink.symlink_data, NFS3_PATH_MAX);
		break;
	}
	case NFS3PROC_MKNOD: {
		MKNOD3args *a = args;
		touch_dirop(&a->where);
		FUZZ_CHECK((unsigned)a->what.type >= NF3REG && (unsigned)a->what.type <= NF3FIFO);
		if (a->what.type == NF3CHR || a->what.type == NF3BLK)
			touch_sattr(&a->what.mknoddata3_u.chr_device.dev_attributes);
		else if (a->what.type == NF3SOCK || a->what.type == NF3FIFO)
			touch_sattr(&a->what.mknoddata3_u.sock_attributes);
		break;
	}
	case NFS3PROC_REMOVE:
		touch_dirop(&((REMOVE3args *)args)->object);
		break;
	case NFS3PROC_RMDIR:
		touch_dirop(&((RMDIR3args *)args)->object);
		break;
	case NFS3PROC_RENAME: {
		RENAME3args *a = args;
		touch_dirop(&a->from);
		touch_dirop(&a->to);
		break;
	}
	case NFS3PROC_LINK: {
		LINK3args *a = args;
		touch_fh(&a->file);
		touch_dirop(&a->link);
		break;
	}
	case NFS3PROC_READDIR: {
		READDIR3args *a = args;
		touch_fh(&a->dir);
		touch(a->cookieverf, sizeof(a->cookieverf));
		break;
	}
	case NFS3PROC_READDIRPLUS: {
		READDIRPLUS3args *a = args;
		touch_fh(&a->dir);
		touch(a->cookieverf, sizeof(a->cookieverf));
		break;
	}
	case NFS3PROC_FSSTAT:
		touch_fh(&((FSSTAT3args *)args)->fsroot);
		break;
	case NFS3PROC_FSINFO:
		touch_fh(&((FSINFO3args *)args)->fsroot);
		break;
	case NFS3PROC_PATHCONF:
		touch_fh(&((PATHCONF3args *)args)->object);
		break;
	case NFS3PROC_COMMIT:
		touch_fh(&((COMMIT3args *)args)->file);
		break;
	default:
		FUZZ_CHECK(!"an NFSv3 procedure with arguments and no touch function");
	}
}

/* Every NFSv3 procedure with arguments starts with a file handle (alone or
 * in diropargs3): the decoded one is the wire's, length and bytes. */
static void check_first_fh(const void *args, const uint8_t *wire, size_t len)
{
	const nfs_fh3 *fh = args;   /* the first member of every such struct */

	FUZZ_CHECK(len >= 4 && fh->data.data_len == xdr_be32(wire));
	FUZZ_CHECK(4 + (size_t)fh->data.data_len <= len);
	FUZZ_CHECK(fh->data.data_len == 0 || memcmp(fh->data.data_val, wire + 4, fh->data.data_len) == 0);
}

/*
 * What libnfs sends upstream for these arguments (the same XDR routine,
 * encoding) is what the client sent: the `len` bytes decoded, but for XDR
 * padding, which the encoder writes as zeros.  A name cut at a NUL byte, or
 * any field re-encoded differently, shows as a byte that differs and is
 * not a zero of the encoder's (a shorter name changes its length word's
 * low byte, never to zero, or the total length).
 */
static void check_forwarded_as_received(const struct proc_desc *desc, void *args,
					const uint8_t *wire, size_t len)
{
	uint8_t *enc = malloc(len + 4);
	ZDR zdr;

	memset(enc, 0xee, len + 4);
	zdrmem_create(&zdr, (char *)enc, (uint32_t)len + 4, ZDR_ENCODE);
	FUZZ_CHECK(desc->decode_args(&zdr, args));
	FUZZ_CHECK(zdr_getpos(&zdr) == len);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK(enc[i] == wire[i] || enc[i] == 0);
	zdr_destroy(&zdr);
	free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned pick = data[0] % (NFS3_PROC_COUNT + MOUNT3_PROC_COUNT);
	uint32_t prog = pick < NFS3_PROC_COUNT ? NFS3_PROGRAM : MOUNT_PROGRAM;
	uint32_t proc = pick < NFS3_PROC_COUNT ? pick : pick - NFS3_PROC_COUNT;
	uint32_t vers = prog == NFS3_PROGRAM ? NFS3_VERSION : MOUNT3_VERSION;
	size_t len = size - 1;
	/* the record's argument bytes, writable as the daemon's are (libnfs
	 * may NUL-terminate a string in place) */
	uint8_t *buf = malloc(len ? len : 1);
	memcpy(buf, data + 1, len);

	enum proc_lookup_status why;
	uint32_t low, high;
	const struct proc_desc *desc = proc_lookup(prog, vers, proc, &why, &low, &high);
	FUZZ_CHECK(desc != NULL && desc->prog == prog && desc->proc == proc);

	int rc = args_check(prog, proc, buf, len, FUZZ_MAX_WRITE);
	FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -EILSEQ);
	/* well-formed but refused: a SYMLINK target holding a NUL byte */
	if (rc == -EILSEQ)
		FUZZ_CHECK(prog == NFS3_PROGRAM && proc == NFS3PROC_SYMLINK);
	if (rc != 0 || !desc->decode_args) {
		free(buf);
		return 0;
	}

	/* daemon/call.c call_dispatch(): zeroed struct, memory stream, decode */
	void *args = calloc(1, desc->args_size);
	uint8_t *wire = malloc(len ? len : 1);   /* the bytes before decoding */
	memcpy(wire, buf, len);
	ZDR zdr;
	zdrmem_create(&zdr, (char *)buf, (uint32_t)len, ZDR_DECODE);
	uint32_t ok = desc->decode_args(&zdr, args);
	/* what the check accepts, the decoder does, within the record */
	FUZZ_CHECK(ok);
	FUZZ_CHECK(zdr_getpos(&zdr) <= len);
	if (prog == NFS3_PROGRAM) {
		check_first_fh(args, wire, len);
		touch_nfs3(proc, args);
	} else {
		touch_str(*(dirpath *)args, MNTPATHLEN);
	}
	check_forwarded_as_received(desc, args, wire, zdr_getpos(&zdr));
	zdr_destroy(&zdr);
	free(args);
	free(wire);
	free(buf);
	return 0;
}

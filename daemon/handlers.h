/*
 * handlers.h — the procedure handlers named in the procedure table
 * (proto/proc.c).  Each takes over a decoded call and answers it exactly
 * once through daemon/call.h; none blocks.
 */
#ifndef NFSCACHED_HANDLERS_H
#define NFSCACHED_HANDLERS_H

struct nfsd_call;

/* Forward unchanged; the upstream's result goes back unchanged. */
void nfsd_proc_forward(struct nfsd_call *call);

/* READ: count bounded by what the proxy accepts (a short read is legal,
 * RFC 1813 §3.3.6), then forwarded. */
void nfsd_proc_read(struct nfsd_call *call);

/* READDIR/READDIRPLUS: reply size bounded likewise. */
void nfsd_proc_readdir(struct nfsd_call *call);

/* FSINFO: forwarded; rtmax/rtpref/wtmax/wtpref clamped to the proxy's limit. */
void nfsd_proc_fsinfo(struct nfsd_call *call);

/* MNT: refused with MNT3ERR_ACCES for a path outside upstream.exports. */
void nfsd_proc_mnt(struct nfsd_call *call);

/* EXPORT: the upstream's list, restricted to upstream.exports. */
void nfsd_proc_export(struct nfsd_call *call);

#endif

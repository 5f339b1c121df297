/*
 * handlers.c — procedure handlers of the pass-through proxy: forwarding with
 * the caller's credential, and the few places where the proxy's own limits
 * or configuration change a call or its result.
 */
#include "config.h"

#include <string.h>

#include "common/log.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"

void nfsd_proc_forward(struct nfsd_call *call)
{
	nfsd_forward_with(call, NULL);
}

void nfsd_proc_readdir(struct nfsd_call *call)
{
	if (call->desc->proc == NFS3PROC_READDIR) {
		READDIR3args *a = call->args;
		if (a->count > nfsd.max_payload)
			a->count = nfsd.max_payload;
	} else {
		READDIRPLUS3args *a = call->args;
		if (a->maxcount > nfsd.max_payload)
			a->maxcount = nfsd.max_payload;
		if (a->dircount > a->maxcount)
			a->dircount = a->maxcount;
		nfsd_forward_with(call, nfsd_readdirplus_snoop);
		return;
	}
	nfsd_forward_with(call, NULL);
}

static uint32_t clamp(uint32_t v, uint32_t max)
{
	return v > max ? max : v;
}

static void fsinfo_fixup(struct nfsd_call *call, void *res)
{
	(void)call;
	FSINFO3res *r = res;

	if (r->status != NFS3_OK)
		return;
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;
	ok->rtmax = clamp(ok->rtmax, nfsd.max_payload);
	ok->rtpref = clamp(ok->rtpref, ok->rtmax);
	ok->wtmax = clamp(ok->wtmax, nfsd.max_payload);
	ok->wtpref = clamp(ok->wtpref, ok->wtmax);
	ok->dtpref = clamp(ok->dtpref, nfsd.max_payload);
}

void nfsd_proc_fsinfo(struct nfsd_call *call)
{
	nfsd_forward_with(call, fsinfo_fixup);
}

void nfsd_proc_mnt(struct nfsd_call *call)
{
	dirpath *path = call->args;

	if (!nfsd_export_allowed(*path)) {
		mountres3 res;
		memset(&res, 0, sizeof(res));
		res.fhs_status = MNT3ERR_ACCES;
		log_info("mount: %s refused: not in upstream.exports", *path);
		call_reply(call, &res);
		return;
	}
	nfsd_forward_with(call, NULL);
}

static void export_fixup(struct nfsd_call *call, void *res)
{
	(void)call;
	exports *list = res;

	while (*list) {
		if (!nfsd_export_allowed((*list)->ex_dir))
			*list = (*list)->ex_next;   /* unlink; the nodes belong to libnfs */
		else
			list = &(*list)->ex_next;
	}
}

void nfsd_proc_export(struct nfsd_call *call)
{
	nfsd_forward_with(call, export_fixup);
}

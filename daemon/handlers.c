/*
 * handlers.c — procedure handlers of the pass-through proxy: forwarding with
 * the caller's credential, and the few places where the proxy's own limits
 * or configuration change a call or its result.
 */
#include "config.h"

#include <string.h>

#include "daemon/call.h"
#include "daemon/handlers.h"
#include "common/log.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "cache/cache.h"



static void forward_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_call *call = priv;

	switch (st) {
	case UPSTREAM_OK:
		if (call->fixup)
			call->fixup(call, res);
		call_reply(call, res);
		break;
	case UPSTREAM_TIMEOUT:
		call_reply_jukebox(call);
		break;
	case UPSTREAM_DENIED:
		call_reply_auth_error(call, RPC_AUTH_BADCRED);
		break;
	case UPSTREAM_FAILED:
	default:
		call_reply_rpc_error(call, RPC_SYSTEM_ERR);
		break;
	}
}

void nfsd_forward_with(struct nfsd_call *call, void (*fixup)(struct nfsd_call *call, void *res))
{
	call->fixup = fixup;
	call->seq = cache_seq();
	if (upstream_call(nfsd.upstream, call->desc, call->args, &call->cred, forward_done, call) != 0)
		call_reply_jukebox(call);
}

void nfsd_proc_forward(struct nfsd_call *call)
{
	nfsd_forward_with(call, NULL);
}

static void readdirplus_fixup(struct nfsd_call *call, void *res)
{
	nfsd_readdirplus_snoop(call, res);
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
		nfsd_forward_with(call, readdirplus_fixup);
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

/* Is `path` one of the space-separated paths of upstream.exports ("" = all)? */
int nfsd_export_allowed(const char *path)
{
	const char *list = nfsd.cfg.upstream_exports;
	size_t n = strlen(path);

	while (path[0] && n > 1 && path[n - 1] == '/')
		n--;   /* "/export/" names "/export" */
	if (!*list)
		return 1;
	while (*list) {
		while (*list == ' ' || *list == ',' || *list == '\t')
			list++;
		size_t w = strcspn(list, " ,\t"), wn = w;
		while (wn > 1 && list[wn - 1] == '/')
			wn--;   /* "/export/" in the list names "/export" too */
		if (wn && wn == n && strncmp(list, path, n) == 0)
			return 1;
		list += w;
	}
	return 0;
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

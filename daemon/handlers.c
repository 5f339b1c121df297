/*
 * handlers.c — procedure handlers of the pass-through proxy: forwarding with
 * the caller's credential, and the few places where the proxy's own limits
 * or configuration change a call or its result.
 */
#include "config.h"

#include "common/log.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"

void nfsd_proc_forward(struct nfsd_call *call)
{
	nfsd_forward_with(call, NULL);
}

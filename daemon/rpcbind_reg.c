/*
 * rpcbind_reg.c — rpcb_set()/rpcb_unset() of NFS 3 and MOUNT 3 for the
 * netid of the listening socket.  Owns nothing but the record of what it set.
 */
#include "config.h"

#include <errno.h>
#include <netconfig.h>
#include <rpc/rpc.h>
#include <stdlib.h>

#include "common/log.h"
#include "daemon/rpcbind_reg.h"

#define NFS_PROGRAM_NUM 100003
#define MOUNT_PROGRAM_NUM 100005

static const struct {
	rpcprog_t prog;
	const char *name;
} programs[] = {
	{ NFS_PROGRAM_NUM, "NFS 3" },
	{ MOUNT_PROGRAM_NUM, "MOUNT 3" },
};
#define N_PROGRAMS (sizeof(programs) / sizeof(programs[0]))

static struct netconfig *reg_nconf;   /* netid registered with, or NULL */
static unsigned reg_count;            /* programs[0..reg_count) are registered */

int rpcbind_register(const struct sockaddr *addr, socklen_t len)
{
	const char *netid = addr->sa_family == AF_INET6 ? "tcp6" : "tcp";
	struct netbuf nb = { .maxlen = len, .len = len, .buf = (void *)addr };

	reg_nconf = getnetconfigent(netid);
	if (!reg_nconf) {
		log_error("rpcbind: no netconfig entry for %s", netid);
		return -EIO;
	}
	char *uaddr = taddr2uaddr(reg_nconf, &nb);
	for (reg_count = 0; reg_count < N_PROGRAMS; reg_count++) {
		if (!rpcb_set(programs[reg_count].prog, 3, reg_nconf, &nb)) {
			log_error("rpcbind: cannot register %s at %s %s (is rpcbind running? does "
				  "another server hold it?)", programs[reg_count].name, netid,
				  uaddr ? uaddr : "?");
			free(uaddr);
			rpcbind_unregister();
			return -EIO;
		}
	}
	log_info("rpcbind: registered NFS 3 and MOUNT 3 at %s %s", netid, uaddr ? uaddr : "?");
	free(uaddr);
	return 0;
}

void rpcbind_unregister(void)
{
	if (!reg_nconf)
		return;
	while (reg_count > 0) {
		reg_count--;
		rpcb_unset(programs[reg_count].prog, 3, reg_nconf);
	}
	freenetconfigent(reg_nconf);
	reg_nconf = NULL;
}

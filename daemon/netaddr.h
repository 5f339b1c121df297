/*
 * netaddr.h — listen addresses ("ADDR:PORT", "[V6]:PORT") and client networks
 * ("10.0.0.0/8 ::1"), parsed once at configuration time and matched per
 * connection.  No I/O, no name resolution.
 */
#ifndef NFSCACHED_NETADDR_H
#define NFSCACHED_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/array.h"

/* Parse "A.B.C.D:PORT" or "[V6]:PORT" (port 0..65535) into *ss / *len.
 * Returns 0 or -EINVAL. */
int netaddr_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* Format a socket address as "A.B.C.D:PORT" / "[V6]:PORT" into buf. */
const char *netaddr_format(const struct sockaddr *sa, char *buf, size_t buflen);

struct netaddr_net {
	int family;           /* AF_INET or AF_INET6 */
	uint8_t addr[16];     /* network address, host bits cleared */
	unsigned prefix_len;  /* bits */
};

struct netaddr_acl {
	ARRAY(struct netaddr_net) nets;
};

/* Parse a space- or comma-separated list of networks ("127.0.0.0/8 ::1 10.1.2.3").
 * An address without /N is a host.  On error returns -EINVAL and puts the bad
 * word in errbuf; the acl is left empty.  Free with netaddr_acl_free(). */
int netaddr_acl_parse(const char *s, struct netaddr_acl *acl, char *errbuf, size_t errlen);
void netaddr_acl_free(struct netaddr_acl *acl);

/* 1 if `sa` (AF_INET, AF_INET6, or v4-mapped v6) lies in one of the networks. */
int netaddr_acl_match(const struct netaddr_acl *acl, const struct sockaddr *sa);

/* Port of an AF_INET/AF_INET6 address in host order, 0 otherwise. */
unsigned netaddr_port(const struct sockaddr *sa);

/* Raw address bytes for keys: copies 4 or 16 bytes into out[16] (zero-padded),
 * a v4-mapped v6 address as IPv4.  Returns AF_INET, AF_INET6 or 0. */
int netaddr_key(const struct sockaddr *sa, uint8_t out[16]);

#endif

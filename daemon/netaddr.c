/*
 * netaddr.c — parsing and matching of listen addresses and client networks.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/netaddr.h"
#include "common/xalloc.h"

static int parse_port(const char *s, unsigned *port)
{
	char *end;
	unsigned long v;

	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 65535 || *s == '-' || *s == '+')
		return -EINVAL;
	*port = (unsigned)v;
	return 0;
}

/* host[size] = the `host_len` bytes at `host_start`, *port = `port_str`:
 * 0, or -EINVAL when either does not fit. */
static int host_port_split(const char *host_start, size_t host_len, const char *port_str,
			   char *host, size_t size, unsigned *port)
{
	if (host_len >= size)
		return -EINVAL;
	memcpy(host, host_start, host_len);
	host[host_len] = '\0';
	return parse_port(port_str, port);
}

/* *ss / *len = `host` (numeric, of `family`) and `port`: 0 or -EINVAL. */
static int sockaddr_fill(int family, const char *host, unsigned port,
			 struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	if (inet_pton(family, host, family == AF_INET6 ? (void *)&sin6->sin6_addr
						       : (void *)&sin->sin_addr) != 1)
		return -EINVAL;
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET6)
		sin6->sin6_port = htons(port);
	else
		sin->sin_port = htons(port);
	*len = family == AF_INET6 ? sizeof(*sin6) : sizeof(*sin);
	return 0;
}

int netaddr_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	unsigned port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' ||
		    host_port_split(s + 1, (size_t)(close - s - 1), close + 2, host, sizeof(host), &port))
			return -EINVAL;
		return sockaddr_fill(AF_INET6, host, port, ss, len);
	}
	const char *colon = strrchr(s, ':');
	if (!colon || host_port_split(s, (size_t)(colon - s), colon + 1, host, sizeof(host), &port))
		return -EINVAL;
	return sockaddr_fill(AF_INET, host, port, ss, len);
}

const char *netaddr_format(const struct sockaddr *sa, char *buf, size_t buflen)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, buflen, "%s:%u", host, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(buf, buflen, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, buflen, "(family %d)", sa->sa_family);
	}
	return buf;
}

static int parse_net(const char *word, struct netaddr_net *net)
{
	char host[64];
	const char *slash = strchr(word, '/');
	size_t hlen = slash ? (size_t)(slash - word) : strlen(word);
	unsigned maxbits;

	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, word, hlen);
	host[hlen] = '\0';
	memset(net, 0, sizeof(*net));
	if (inet_pton(AF_INET, host, net->addr) == 1) {
		net->family = AF_INET;
		maxbits = 32;
	} else if (inet_pton(AF_INET6, host, net->addr) == 1) {
		net->family = AF_INET6;
		maxbits = 128;
	} else {
		return -EINVAL;
	}
	net->prefix_len = maxbits;
	if (slash) {
		char *end;
		unsigned long v = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || v > maxbits)
			return -EINVAL;
		net->prefix_len = (unsigned)v;
	}
	for (unsigned bit = net->prefix_len; bit < maxbits; bit++)
		net->addr[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
	return 0;
}

int netaddr_acl_parse(const char *s, struct netaddr_acl *acl, char *errbuf, size_t errlen)
{
	char *copy = xstrdup(s), *save = NULL;

	memset(&acl->nets, 0, sizeof(acl->nets));
	for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		struct netaddr_net net;
		if (parse_net(w, &net) != 0) {
			snprintf(errbuf, errlen, "%s", w);
			free(copy);
			netaddr_acl_free(acl);
			return -EINVAL;
		}
		ARRAY_PUSH(&acl->nets, net);
	}
	free(copy);
	return 0;
}

void netaddr_acl_free(struct netaddr_acl *acl)
{
	ARRAY_FREE(&acl->nets);
}

int netaddr_key(const struct sockaddr *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET) {
		memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(out, a->s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(out, a->s6_addr, 16);
		return AF_INET6;
	}
	return 0;
}

int netaddr_acl_match(const struct netaddr_acl *acl, const struct sockaddr *sa)
{
	uint8_t addr[16];
	int family = netaddr_key(sa, addr);

	for (size_t i = 0; i < acl->nets.n; i++) {
		const struct netaddr_net *n = &acl->nets.v[i];
		if (n->family != family)
			continue;
		unsigned full = n->prefix_len / 8, rest = n->prefix_len % 8;
		if (memcmp(addr, n->addr, full) != 0)
			continue;
		if (rest && ((addr[full] ^ n->addr[full]) & (uint8_t)(0xff00u >> rest)))
			continue;
		return 1;
	}
	return 0;
}

unsigned netaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}

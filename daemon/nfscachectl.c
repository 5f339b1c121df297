/*
 * nfscachectl — the control client: sends one command line to nfscached's
 * control socket and prints the answer.  Exit 0 on "ok", 1 when the daemon
 * answers an error, 2 on usage errors or when the daemon cannot be reached.
 */
#include "config.h"
#include "common/xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/nfscached/ctl.sock"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nfscachectl [-s|--socket PATH] COMMAND [ARGS]\n"
		"  status                        version, uptime, listen address, upstream and cache state\n"
		"  stats [--json|--prometheus]   all counters\n"
		"  stats exports [--json|--prometheus]\n"
		"                                per-export READ hits, partial hits, misses, bytes\n"
		"  stats reset                   zero the counters (not the gauges)\n"
		"  flush                         write back all dirty data; returns when done\n"
		"  invalidate EXPORT/PATH|--all  drop cached clean data (dirty data written back first)\n"
		"  cull                          cull least-recently-used objects until above brun/frun\n"
		"stats reset, flush, invalidate and cull need root, the daemon's user or the socket's group\n"
		"default socket: %s\n", DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_SOCKET;
	char line[1024] = "";
	int c;

	while ((c = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("nfscachectl %s\n", PACKAGE_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (strlen(line) + strlen(argv[i]) + 2 >= sizeof(line)) {
			fprintf(stderr, "nfscachectl: command too long\n");
			return 2;
		}
		strcat(line, argv[i]);
		strcat(line, i + 1 < argc ? " " : "\n");
	}

	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "nfscachectl: socket path too long: %s\n", path);
		return 2;
	}
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		fprintf(stderr, "nfscachectl: cannot connect to %s: %s (is nfscached running?)\n", path,
			strerror(errno));
		return 2;
	}
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "nfscachectl: write to %s: %s\n", path, strerror(errno));
			return 2;
		}
		off += (size_t)n;
	}

	char *reply = NULL;
	size_t rlen = 0, cap = 0;
	for (;;) {
		if (cap - rlen < 4096) {
			cap = cap ? cap * 2 : 8192;
			reply = xreallocarray(reply, cap + 1, 1);
		}
		ssize_t n = read(fd, reply + rlen, cap - rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "nfscachectl: read from %s: %s\n", path, strerror(errno));
			return 2;
		}
		if (n == 0)
			break;
		rlen += (size_t)n;
	}
	close(fd);
	if (!reply || rlen == 0) {
		fprintf(stderr, "nfscachectl: no answer from %s\n", path);
		return 2;
	}
	reply[rlen] = '\0';
	if (strncmp(reply, "ok\n", 3) == 0) {
		fwrite(reply + 3, 1, rlen - 3, stdout);
		free(reply);
		return 0;
	}
	const char *msg = strncmp(reply, "error: ", 7) == 0 ? reply + 7 : reply;
	fprintf(stderr, "nfscachectl: %s", msg);
	if (rlen && reply[rlen - 1] != '\n')
		fputc('\n', stderr);
	free(reply);
	return 1;
}

/*
 * nfscachectl — the control client: sends one command line to nfscached's
 * control socket and prints the answer, or (`top`) shows its rates live
 * (ctl_top.c), asking once a connection as the one-shot commands do.
 * Exit 0 on "ok", 1 when the daemon answers an error, 2 on usage errors or
 * when the daemon cannot be reached.
 */
#include "config.h"
#include "common/xalloc.h"
#include "daemon/ctl_top.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
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
		"  top [--once] [--interval SECONDS]\n"
		"                                live rates from stats and status (q quits); plain\n"
		"                                text, one frame, with --once or when not on a terminal\n"
		"stats reset, flush, invalidate and cull need root, the daemon's user or the socket's group\n"
		"default socket: %s\n", DEFAULT_SOCKET);
}

/* Exit statuses (nfscachectl(8)). */
enum {
	CTL_EXIT_OK = 0,          /* the daemon answered "ok" */
	CTL_EXIT_ERROR = 1,       /* the daemon answered "error: ..." */
	CTL_EXIT_USAGE = 2,       /* a usage error, or no daemon to ask */
};

/* The command line to send: the words of argv from `first`, one space
 * apart, ending in "\n", into line[len].  Returns 0, or -1 after printing
 * when it does not fit. */
static int command_line_join(int argc, char **argv, int first, char *line, size_t len)
{
	line[0] = '\0';
	for (int i = first; i < argc; i++) {
		if (strlen(line) + strlen(argv[i]) + 2 >= len) {
			fprintf(stderr, "nfscachectl: command too long\n");
			return -1;
		}
		strcat(line, argv[i]);
		strcat(line, i + 1 < argc ? " " : "\n");
	}
	return 0;
}

/* Parse the options into *socket_path and the command into line[len].
 * Returns -1 to go on, or the exit status (after -h, -V or a usage error). */
static int args_parse(int argc, char **argv, const char **socket_path, char *line, size_t len)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's': *socket_path = optarg; break;
		case 'h': usage(stdout); return CTL_EXIT_OK;
		case 'V': printf("nfscachectl %s\n", PACKAGE_VERSION); return CTL_EXIT_OK;
		default: usage(stderr); return CTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	return command_line_join(argc, argv, optind, line, len) == 0 ? -1 : CTL_EXIT_USAGE;
}

/* How a request waits where its socket would block: NULL (the one-shot
 * commands) blocks in the system call, for as long as the daemon takes. */
struct ctl_wait {
	top_wait_fn *fn;
	void *ctx;
};

/* A socket connected to the daemon at `path` into *fd (non-blocking when
 * `w` is given).  Returns 0, the negative value of w->fn, or -errno with
 * `why` filled. */
static int daemon_socket_connected(const char *path, const struct ctl_wait *w, int *fd,
				   char *why, size_t why_len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(why, why_len, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (w ? SOCK_NONBLOCK : 0), 0);
	if (*fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* a full listen queue: EAGAIN on a non-blocking socket; try again */
	while (connect(*fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		rc = -errno;
		if (rc == -EINTR)
			continue;
		if (rc != -EAGAIN || !w)
			goto fail;
		rc = w->fn(w->ctx, -1, 0);
		if (rc < 0) {
			close(*fd);
			return rc;
		}
	}
	return 0;
fail:
	snprintf(why, why_len, "cannot connect to %s: %s (is nfscached running?)", path,
		 strerror(-rc));
	if (*fd >= 0)
		close(*fd);
	return rc;
}

/* Write all of `line` to fd.  Returns 0, the negative value of w->fn, or
 * -errno with `why` filled. */
static int command_send(int fd, const char *line, const char *path, const struct ctl_wait *w,
			char *why, size_t why_len)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);
		if (n < 0) {
			int rc = -errno;

			if (rc == -EINTR)
				continue;
			if (rc == -EAGAIN && w) {
				if ((rc = w->fn(w->ctx, fd, POLLOUT)) < 0)
					return rc;
				continue;
			}
			snprintf(why, why_len, "write to %s: %s", path, strerror(-rc));
			return rc;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Everything the daemon writes until it closes, NUL-terminated, into
 * *reply (malloc'd) and its length into *len.  Returns 0, the negative
 * value of w->fn, or -errno with `why` filled (*reply NULL both times). */
static int reply_read(int fd, const char *path, const struct ctl_wait *w, char **reply,
		      size_t *len, char *why, size_t why_len)
{
	size_t cap = 0;
	int rc = 0;

	*reply = NULL;
	*len = 0;
	for (;;) {
		if (cap - *len < 4096) {
			cap = cap ? cap * 2 : 8192;
			*reply = xreallocarray(*reply, cap + 1, 1);
		}
		ssize_t n = read(fd, *reply + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && w) {
			if ((rc = w->fn(w->ctx, fd, POLLIN)) < 0)
				break;
			continue;
		}
		if (n < 0) {
			rc = -errno;
			snprintf(why, why_len, "read from %s: %s", path, strerror(-rc));
			break;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	if (rc < 0) {
		free(*reply);
		*reply = NULL;
		return rc;
	}
	(*reply)[*len] = '\0';
	return 0;
}

/* One request on its own connection: send `line` to the daemon at `path`
 * and read its whole answer into *reply (malloc'd, NUL-terminated, length
 * *len), waiting through `w` (NULL: blocking).  Returns 0, the negative
 * value of w->fn, or -errno with `why` filled when the daemon cannot be
 * reached or the exchange fails. */
static int ctl_request(const char *path, const char *line, const struct ctl_wait *w, char **reply,
		       size_t *len, char *why, size_t why_len)
{
	int fd, rc = daemon_socket_connected(path, w, &fd, why, why_len);

	*reply = NULL;
	if (rc < 0)
		return rc;
	rc = command_send(fd, line, path, w, why, why_len);
	if (rc == 0)
		rc = reply_read(fd, path, w, reply, len, why, why_len);
	close(fd);
	return rc;
}

/* top_request_fn over ctl_request(); `arg` is the socket path. */
static int top_request(void *arg, const char *line, top_wait_fn *wait, void *wait_ctx,
		       char **reply, char *why, size_t why_len)
{
	const struct ctl_wait w = { .fn = wait, .ctx = wait_ctx };
	const char *path = arg;
	size_t len;
	int rc = ctl_request(path, line, &w, reply, &len, why, why_len);

	if (rc < 0)
		return rc;
	if (strncmp(*reply, "ok\n", 3) == 0) {
		memmove(*reply, *reply + 3, len - 2);
		return 0;
	}
	if (len == 0)
		snprintf(why, why_len, "no answer from %s", path);
	else
		snprintf(why, why_len, "%.*s", (int)strcspn(*reply, "\n"),
			 strncmp(*reply, "error: ", 7) == 0 ? *reply + 7 : *reply);
	free(*reply);
	*reply = NULL;
	return len == 0 ? -ENODATA : 1;
}

/* `nfscachectl top [--once] [--interval SECONDS]`: argv[0] is "top". */
static int top_main(int argc, char **argv, const char *path)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_opts o = { .interval_s = 1, .request = top_request, .request_arg = (void *)path };
	char *end;
	int opt;

	optind = 0;        /* glibc: start a new scan */
	while ((opt = getopt_long(argc, argv, "+oi:", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': o.once = 1; break;
		case 'i':
			o.interval_s = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(o.interval_s) || o.interval_s < 0.1 ||
			    o.interval_s > 3600) {
				fprintf(stderr, "nfscachectl: top: --interval %s: seconds from 0.1 to 3600\n",
					optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		default: usage(stderr); return CTL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	return top_run(&o);
}

/* Print the reply's body to stdout ("ok") or its message to stderr
 * ("error: ..."), and return the exit status it calls for. */
static int reply_exit_status(const char *reply, size_t len, const char *path)
{
	if (len == 0) {
		fprintf(stderr, "nfscachectl: no answer from %s\n", path);
		return CTL_EXIT_USAGE;
	}
	if (strncmp(reply, "ok\n", 3) == 0) {
		fwrite(reply + 3, 1, len - 3, stdout);
		return CTL_EXIT_OK;
	}
	fprintf(stderr, "nfscachectl: %s", strncmp(reply, "error: ", 7) == 0 ? reply + 7 : reply);
	if (reply[len - 1] != '\n')
		fputc('\n', stderr);
	return CTL_EXIT_ERROR;
}

int main(int argc, char **argv)
{
	const char *path = DEFAULT_SOCKET;
	char line[1024], why[512];
	char *reply;
	size_t len;
	int rc = args_parse(argc, argv, &path, line, sizeof(line));

	if (rc >= 0)
		return rc;
	if (strcmp(argv[optind], "top") == 0)
		return top_main(argc - optind, argv + optind, path);
	if (ctl_request(path, line, NULL, &reply, &len, why, sizeof(why)) != 0) {
		fprintf(stderr, "nfscachectl: %s\n", why);
		return CTL_EXIT_USAGE;
	}
	rc = reply_exit_status(reply, len, path);
	free(reply);
	return rc;
}

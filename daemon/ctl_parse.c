/*
 * ctl_parse.c — the control protocol's request line: gathering, splitting
 * into words, finding the command (ctl_parse.h).  Knows nothing of sockets,
 * permissions or what the commands do: those are ctl.c's.
 */
#include "config.h"

#include <string.h>

#include "daemon/ctl_parse.h"

const struct ctl_cmd_name ctl_cmd_names[CTL_CMD_COUNT] = {
	[CTL_CMD_STATUS] = { "status", NULL, 0 },
	[CTL_CMD_STATS_RESET] = { "stats", "reset", 1 },
	[CTL_CMD_STATS] = { "stats", NULL, 0 },
	[CTL_CMD_FLUSH] = { "flush", NULL, 1 },
	[CTL_CMD_INVALIDATE] = { "invalidate", NULL, 1 },
	[CTL_CMD_CULL] = { "cull", NULL, 1 },
};

enum ctl_line_status ctl_line_received(struct ctl_line *l, size_t n)
{
	if (n == 0 && l->len == 0)
		return CTL_LINE_CLOSED;
	if (memchr(l->buf + l->len, '\0', n))
		return CTL_LINE_NUL;
	l->len += n;
	l->buf[l->len] = '\0';
	if (strchr(l->buf, '\n') || n == 0)   /* a line, or the last words before EOF */
		return CTL_LINE_READY;
	if (l->len == sizeof(l->buf) - 1)
		return CTL_LINE_TOO_LONG;
	return CTL_LINE_MORE;
}

void ctl_parse(char *line, struct ctl_request *req)
{
	char *save = NULL;

	req->argc = 0;
	req->cmd = -1;
	for (char *w = strtok_r(line, " \t\r\n", &save); w && req->argc < CTL_MAX_ARGS;
	     w = strtok_r(NULL, " \t\r\n", &save))
		req->argv[req->argc++] = w;
	for (int i = 0; req->argc > 0 && i < CTL_CMD_COUNT; i++) {
		const struct ctl_cmd_name *k = &ctl_cmd_names[i];
		if (strcmp(k->name, req->argv[0]) != 0)
			continue;
		if (k->sub && (req->argc < 2 || strcmp(k->sub, req->argv[1]) != 0))
			continue;
		req->cmd = i;
		return;
	}
}

/*
 * fuzz_ctl.c — libFuzzer target for the control socket's request parser
 * (daemon/ctl_parse.c): the bytes a client sends, in reads of any size,
 * gathered into a line (ctl_line_received), split into words and matched
 * to a command (ctl_parse).
 *
 * Input: one byte k (0..7), the bytes sent, then k bytes at the end giving
 * the sizes of the reads (cycled; none: one read of everything), and the
 * client's EOF after the last.  Checked: the buffer never overflows and
 * stays NUL-terminated; the status is right (a NUL byte, 1023 bytes without
 * a newline, a line, EOF); the words are the line's words in order, at most
 * CTL_MAX_ARGS, each inside the line; the command found is the one the
 * protocol (ctl.h) names by those words.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ctl_parse.h"
#include "tests/fuzz/fuzz.h"

static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The command the protocol names by these words, or -1. */
static int expected_cmd(int argc, char **argv)
{
	if (argc == 0)
		return -1;
	if (strcmp(argv[0], "status") == 0)
		return CTL_CMD_STATUS;
	if (strcmp(argv[0], "stats") == 0)
		return argc >= 2 && strcmp(argv[1], "reset") == 0 ? CTL_CMD_STATS_RESET : CTL_CMD_STATS;
	if (strcmp(argv[0], "flush") == 0)
		return CTL_CMD_FLUSH;
	if (strcmp(argv[0], "invalidate") == 0)
		return CTL_CMD_INVALIDATE;
	if (strcmp(argv[0], "cull") == 0)
		return CTL_CMD_CULL;
	return -1;
}

static void check_parse(struct ctl_line *l)
{
	char orig[CTL_LINE_MAX];
	struct ctl_request req;

	FUZZ_CHECK(l->len < CTL_LINE_MAX && l->buf[l->len] == '\0');
	FUZZ_CHECK(strlen(l->buf) == l->len);   /* NUL bytes never get in */
	memcpy(orig, l->buf, l->len + 1);
	ctl_parse(l->buf, &req);
	FUZZ_CHECK(req.argc >= 0 && req.argc <= CTL_MAX_ARGS);

	/* the words of the line, found independently */
	size_t pos = 0;
	int w = 0;
	const char *prev_end = l->buf;
	while (w < req.argc) {
		while (pos < l->len && is_sep(orig[pos]))
			pos++;
		FUZZ_CHECK(pos < l->len);   /* there is such a word */
		size_t start = pos;
		while (pos < l->len && !is_sep(orig[pos]))
			pos++;
		size_t wl = pos - start;
		FUZZ_CHECK(req.argv[w] == l->buf + start);
		FUZZ_CHECK(req.argv[w] >= prev_end);
		FUZZ_CHECK(strlen(req.argv[w]) == wl && wl > 0);
		FUZZ_CHECK(memcmp(req.argv[w], orig + start, wl) == 0);
		prev_end = req.argv[w] + wl;
		w++;
	}
	if (req.argc < CTL_MAX_ARGS) {
		/* no word was left out */
		while (pos < l->len && is_sep(orig[pos]))
			pos++;
		FUZZ_CHECK(pos == l->len);
	}
	FUZZ_CHECK(req.cmd == expected_cmd(req.argc, req.argv));
	if (req.cmd >= 0) {
		const struct ctl_cmd_name *k = &ctl_cmd_names[req.cmd];
		FUZZ_CHECK(strcmp(k->name, req.argv[0]) == 0);
		FUZZ_CHECK(!k->sub || (req.argc >= 2 && strcmp(k->sub, req.argv[1]) == 0));
		/* only status and plain stats leave the state alone */
		FUZZ_CHECK(k->mutating == !(req.cmd == CTL_CMD_STATUS || req.cmd == CTL_CMD_STATS));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t k = data[0] % 8;
	data++;
	size--;
	if (k > size)
		k = size;
	const uint8_t *sizes = data + size - k;
	size_t n = size - k, off = 0, piece = 0;
	struct ctl_line *l = calloc(1, sizeof(*l));
	enum ctl_line_status st = CTL_LINE_MORE;

	while (st == CTL_LINE_MORE) {
		/* one read(): what the client sent next, as much as fits */
		size_t room = sizeof(l->buf) - 1 - l->len;
		size_t len = n - off;
		if (k) {
			size_t want = (size_t)sizes[piece++ % k] + 1;
			if (want < len)
				len = want;
		}
		if (len > room)
			len = room;
		FUZZ_CHECK(len > 0 || off == n);   /* room is never 0 while MORE */
		int had_nul = memchr(data + off, '\0', len) != NULL;
		size_t before = l->len;
		memcpy(l->buf + l->len, data + off, len);
		off += len;
		st = ctl_line_received(l, len);
		switch (st) {
		case CTL_LINE_CLOSED:
			FUZZ_CHECK(len == 0 && before == 0);
			break;
		case CTL_LINE_NUL:
			FUZZ_CHECK(had_nul && l->len == before);
			break;
		case CTL_LINE_READY:
			FUZZ_CHECK(!had_nul);
			FUZZ_CHECK(len == 0 || memchr(l->buf, '\n', l->len) != NULL);
			check_parse(l);
			break;
		case CTL_LINE_TOO_LONG:
			FUZZ_CHECK(!had_nul && l->len == sizeof(l->buf) - 1);
			FUZZ_CHECK(memchr(l->buf, '\n', l->len) == NULL);
			break;
		case CTL_LINE_MORE:
			FUZZ_CHECK(!had_nul && len > 0 && l->len == before + len);
			FUZZ_CHECK(l->len < sizeof(l->buf) - 1);
			FUZZ_CHECK(memchr(l->buf, '\n', l->len) == NULL);
			break;
		}
	}
	free(l);
	return 0;
}

/*
 * ctl_parse.h — the control protocol's request line, apart from the socket
 * (ctl.c): the bytes a client sends are gathered into one line, split into
 * words and matched against the command names.  No I/O, no allocation, no
 * daemon state: usable (and fuzzed, tests/fuzz/fuzz_ctl.c) alone.
 *
 * A request is one line of text of at most CTL_LINE_MAX - 1 bytes ending
 * with a newline, or the words sent before the client shut its side down.
 * Words are separated by spaces, tabs, CR and LF; words past the
 * CTL_MAX_ARGS-th are ignored.  The command is the first word, and for
 * `stats reset` the second.
 */
#ifndef NFSCACHED_CTL_PARSE_H
#define NFSCACHED_CTL_PARSE_H

#include <stddef.h>

#define CTL_LINE_MAX 1024   /* bytes of the line buffer, its terminating NUL included */
#define CTL_MAX_ARGS 8      /* words of a request looked at */

/* The bytes of a request received so far. */
struct ctl_line {
	char buf[CTL_LINE_MAX];  /* NUL-terminated after ctl_line_received() */
	size_t len;              /* bytes received, 0..CTL_LINE_MAX - 1 */
};

enum ctl_line_status {
	CTL_LINE_MORE = 0,    /* no newline yet: read again */
	CTL_LINE_READY,       /* a line, or the words sent before EOF: ctl_parse() it */
	CTL_LINE_CLOSED,      /* EOF before any byte: close without an answer */
	CTL_LINE_NUL,         /* a NUL byte arrived: a command is text */
	CTL_LINE_TOO_LONG,    /* CTL_LINE_MAX - 1 bytes and no newline */
};

/*
 * The reader put `n` new bytes at l->buf + l->len (at most
 * CTL_LINE_MAX - 1 - l->len of them); n == 0 means end of file.  Accounts
 * for them, NUL-terminates the buffer and says what to do next.  After
 * CTL_LINE_NUL the new bytes are not counted in l->len.
 */
enum ctl_line_status ctl_line_received(struct ctl_line *l, size_t n);

/* The commands of the control protocol (ctl.h), indexes of ctl_cmd_names. */
enum ctl_cmd_id {
	CTL_CMD_STATUS = 0,
	CTL_CMD_STATS_RESET,
	CTL_CMD_STATS,
	CTL_CMD_FLUSH,
	CTL_CMD_INVALIDATE,
	CTL_CMD_CULL,
	CTL_CMD_COUNT,
};

struct ctl_cmd_name {
	const char *name;     /* first word */
	const char *sub;      /* second word, or NULL: any arguments follow */
	int mutating;         /* changes state: the peer must be permitted (ctl.h) */
};

/* Names of the commands, by enum ctl_cmd_id, in matching order. */
extern const struct ctl_cmd_name ctl_cmd_names[CTL_CMD_COUNT];

/* A request split into words. */
struct ctl_request {
	int argc;                    /* words, 0..CTL_MAX_ARGS */
	char *argv[CTL_MAX_ARGS];    /* into the line passed to ctl_parse() */
	int cmd;                     /* enum ctl_cmd_id, or -1: no word, or no such command */
};

/*
 * Split the NUL-terminated `line` in place (separators become NULs) into
 * req->argv and find the command: the first entry of ctl_cmd_names whose
 * name is the first word and whose sub, when it has one, is the second.
 * req->argv points into `line`, which must outlive it.
 */
void ctl_parse(char *line, struct ctl_request *req);

#endif

/*
 * ctl_top_screen.c — `nfscachectl top`, the program: takes a sample every
 * interval through the request function nfscachectl.c hands it, each with
 * a deadline, while keys (q), resizes and the stop signals are watched in
 * one ppoll(); shows the frames ctl_top.c computes on a curses screen, or
 * one frame as plain text.
 */
#include "config.h"
#include "daemon/ctl_top.h"
#include "common/xalloc.h"

#include <curses.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- waiting ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double top_answer_timeout_s(double interval_s)
{
	return interval_s > TOP_ANSWER_MIN_S ? interval_s : TOP_ANSWER_MIN_S;
}

static volatile sig_atomic_t top_stop;  /* SIGINT, SIGTERM or SIGHUP came */

static void top_stop_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* What a wait watches besides the socket; written by top_plain() and
 * top_screen(). */
struct top_wait {
	double deadline_s;          /* CLOCK_MONOTONIC: the request's deadline */
	double timeout_s;           /* per request, for the message */
	int screen;                 /* curses is up: resizes (and keys) are read */
	int keys;                   /* stdin is a terminal not at its end: keys are read */
	const char *text;           /* the frame on the screen, redrawn on a resize */
	const sigset_t *mask;       /* the signal mask while waiting (the stop
				     * signals and SIGWINCH are blocked outside); NULL: as is */
};

static void screen_draw(const char *text);

/* Read the keys curses has (stdin is non-blocking for it): a resize
 * redraws.  Returns 1 for q, -1 when none was there, 0 otherwise.  Reads
 * at most a few, so that endless input cannot keep it. */
static int keys_read(struct top_wait *w)
{
	int got = 0;

	for (int i = 0; i < 64; i++) {
		int ch = getch();

		if (ch == ERR)
			break;
		got = 1;
		if (ch == 'q' || ch == 'Q')
			return 1;
		if (ch == KEY_RESIZE && w->text)
			screen_draw(w->text);
	}
	return got ? 0 : -1;
}

/* Wait until `fd` (-1: none) is ready for `events` or CLOCK_MONOTONIC
 * reaches `until_s`, answering keys and resizes on the screen.  Returns 1
 * (fd ready), 0 (until_s reached), or -ECANCELED (q or a stop signal). */
static int wait_until(struct top_wait *w, int fd, short events, double until_s)
{
	for (;;) {
		struct pollfd p[2];
		nfds_t n = 0, k = 0;
		double left = until_s - now_s();

		if (top_stop)
			return -ECANCELED;
		if (left <= 0)
			return 0;
		if (fd >= 0)
			p[n++] = (struct pollfd){ .fd = fd, .events = events };
		if (w->screen && w->keys) {
			k = n;
			p[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		}
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		int rc = ppoll(p, n, &ts, w->mask);
		if (rc < 0 && errno != EINTR)
			return -ECANCELED;      /* cannot wait: as if asked to stop */
		if (rc < 0 && w->screen && keys_read(w) == 1)  /* a resize (SIGWINCH) */
			return -ECANCELED;
		if (rc <= 0)
			continue;
		if (w->screen && w->keys && p[k].revents) {
			int r = keys_read(w);

			if (r == 1)
				return -ECANCELED;
			/* readable without a key: its end (EOF, hang-up); no
			 * more keys, the signals still stop */
			if (r < 0 || (p[k].revents & (POLLHUP | POLLERR | POLLNVAL)))
				w->keys = 0;
		}
		if (fd >= 0 && p[0].revents)
			return 1;
	}
}

/* top_wait_fn over wait_until(), `ctx` a struct top_wait. */
static int request_wait(void *ctx, int fd, short events)
{
	struct top_wait *w = ctx;
	double until_s = w->deadline_s;
	int rc;

	if (fd < 0 && now_s() + TOP_RETRY_MS / 1000.0 < until_s)
		until_s = now_s() + TOP_RETRY_MS / 1000.0;
	rc = wait_until(w, fd, events, until_s);
	if (rc < 0)
		return rc;
	return rc == 0 && now_s() >= w->deadline_s ? -ETIMEDOUT : 0;
}

/* ---- sampling ------------------------------------------------------------------ */

#define TOP_QUIT (-1)           /* sample_take(): the user asked to quit */

/* Ask for `stats` and `status` into *s, each within w->timeout_s.
 * Returns 0, TOP_QUIT, or the exit status (1: the daemon answered an
 * error; 2: no daemon, or no answer in time) with `why` filled. */
static int sample_take(const struct top_opts *o, struct top_wait *w, struct top_sample *s,
		       char *why, size_t why_len)
{
	static const char *const lines[2] = { "stats\n", "status\n" };
	struct top_vars *into[2] = { &s->stats, &s->status };

	memset(s, 0, sizeof(*s));
	s->t_s = now_s();
	for (int i = 0; i < 2; i++) {
		char *reply = NULL;

		w->deadline_s = now_s() + w->timeout_s;
		int rc = o->request(o->request_arg, lines[i], request_wait, w, &reply, why, why_len);
		if (rc == -ETIMEDOUT)
			snprintf(why, why_len, "the daemon did not answer within %g s", w->timeout_s);
		if (rc != 0) {
			top_sample_free(s);
			return rc == -ECANCELED ? TOP_QUIT : rc < 0 ? 2 : 1;
		}
		rc = top_vars_parse(into[i], reply);
		free(reply);
		if (rc < 0) {
			snprintf(why, why_len, "the answer to %.*s is not \"name value\" lines",
				 (int)strlen(lines[i]) - 1, lines[i]);
			top_sample_free(s);
			return 1;
		}
	}
	return 0;
}

/* The reason top ends, on stderr, control bytes made '?'. */
static void why_print(char *why)
{
	top_text_printable(why);
	fprintf(stderr, "nfscachectl: %s\n", why);
}

/* Sleep until CLOCK_MONOTONIC reaches `until_s`. */
static void sleep_until(double until_s)
{
	for (double left = until_s - now_s(); left > 0; left = until_s - now_s()) {
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		nanosleep(&ts, NULL);
	}
}

static int top_plain(const struct top_opts *o, struct top_wait *w)
{
	struct top_sample a, b;
	struct top_frame f;
	char why[512];
	int rc = sample_take(o, w, &a, why, sizeof(why));

	if (rc == 0) {
		sleep_until(a.t_s + o->interval_s);
		rc = sample_take(o, w, &b, why, sizeof(why));
		if (rc == 0) {
			top_frame_compute(&f, &a, &b);
			top_frame_write(stdout, &f);
			fflush(stdout);
			top_sample_free(&b);
		}
		top_sample_free(&a);
	}
	if (rc == TOP_QUIT)
		return 0;
	if (rc != 0)
		why_print(why);
	return rc;
}

/* ---- the curses screen ------------------------------------------------------ */

/* Draw `text` (the lines of a frame) and the key help line. */
static void screen_draw(const char *text)
{
	const char *p = text;

	erase();
	for (int row = 0; *p && row < LINES - 1; row++) {
		const char *end = strchr(p, '\n');
		int len = end ? (int)(end - p) : (int)strlen(p);

		if (row == 0)
			attron(A_BOLD);
		mvaddnstr(row, 0, p, len < COLS ? len : COLS);
		if (row == 0)
			attroff(A_BOLD);
		p += len + (end ? 1 : 0);
	}
	mvaddnstr(LINES - 1, 0, "q: quit", COLS);
	refresh();
}

/* The frame of prev -> cur as text, malloc'd. */
static char *frame_text(const struct top_sample *prev, const struct top_sample *cur)
{
	struct top_frame f;
	char *text = NULL;
	size_t len = 0;
	FILE *m = xopen_memstream(&text, &len);

	top_frame_compute(&f, prev, cur);
	top_frame_write(m, &f);
	fclose(m);
	return text;
}

/* Catch the stop signals into top_stop and block them with SIGWINCH
 * (curses' resize), so that they are taken only inside ppoll() with
 * *waiting: no signal is lost between a check and a wait.  *old gets
 * what to restore. */
static void signals_catch(sigset_t *old, sigset_t *waiting, struct sigaction old_sa[3])
{
	static const int stops[3] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = top_stop_signal };
	sigset_t block;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (int i = 0; i < 3; i++) {
		sigaction(stops[i], &sa, &old_sa[i]);
		sigaddset(&block, stops[i]);
	}
	sigaddset(&block, SIGWINCH);
	sigprocmask(SIG_BLOCK, &block, old);
	*waiting = *old;
	for (int i = 0; i < 3; i++)
		sigdelset(waiting, stops[i]);
	sigdelset(waiting, SIGWINCH);
}

static void signals_restore(const sigset_t *old, const struct sigaction old_sa[3])
{
	static const int stops[3] = { SIGINT, SIGTERM, SIGHUP };

	sigprocmask(SIG_SETMASK, old, NULL);
	for (int i = 0; i < 3; i++)
		sigaction(stops[i], &old_sa[i], NULL);
}

static int top_screen(const struct top_opts *o, struct top_wait *w)
{
	struct sigaction old_sa[3];
	struct top_sample prev, cur;
	sigset_t old, waiting;
	char why[512];
	char *text = NULL;
	int rc;

	signals_catch(&old, &waiting, old_sa);
	w->mask = &waiting;
	rc = sample_take(o, w, &prev, why, sizeof(why));
	if (rc != 0)
		goto out;
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	w->screen = 1;
	w->keys = isatty(STDIN_FILENO);
	text = frame_text(NULL, &prev);
	w->text = text;
	screen_draw(text);
	while (wait_until(w, -1, 0, prev.t_s + o->interval_s) == 0) {
		rc = sample_take(o, w, &cur, why, sizeof(why));
		if (rc != 0)
			break;
		free(text);
		text = frame_text(&prev, &cur);
		w->text = text;
		screen_draw(text);
		top_sample_free(&prev);
		prev = cur;
	}
	endwin();
	w->screen = 0;
	w->text = NULL;
	free(text);
	top_sample_free(&prev);
out:
	signals_restore(&old, old_sa);
	if (rc == TOP_QUIT)
		return 0;
	if (rc != 0)
		why_print(why);
	return rc;
}

int top_run(const struct top_opts *o)
{
	struct top_wait w = {
		.timeout_s = o->answer_timeout_s > 0 ? o->answer_timeout_s :
						     top_answer_timeout_s(o->interval_s),
	};

	top_stop = 0;
	if (o->once || !isatty(STDOUT_FILENO))
		return top_plain(o, &w);
	return top_screen(o, &w);
}

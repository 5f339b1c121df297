/*
 * log.h — one line per event, to stderr in the foreground and to syslog
 * otherwise.  The level is checked before the arguments are evaluated, so
 * debug lines cost nothing when off.  Format: "module: what happened: why".
 */
#ifndef NFSCACHED_LOG_H
#define NFSCACHED_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARNING = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

extern enum log_level log_level_current;

/* Start logging: to stderr when `to_stderr`, to syslog (ident "nfscached",
 * facility daemon) otherwise.  Callable again to switch. */
void log_init(int to_stderr, enum log_level level);

void log_set_level(enum log_level level);

/* Parse "error|warning|info|debug"; returns the level or -1. */
int log_level_parse(const char *s);
const char *log_level_name(enum log_level level);

void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* State of one rate-limited call site. */
struct log_ratelimit {
	double last_s;          /* CLOCK_MONOTONIC seconds of the last line written */
	unsigned suppressed;    /* lines dropped since */
};

/* 1 if a line may be written now (at most one per second per site); writes
 * a "N similar lines suppressed" line first when some were dropped. */
int log_ratelimit_allow(struct log_ratelimit *rl, enum log_level level);

/* For events a client or the network can repeat at will. */
#define log_limited(lvl, ...) \
	do { \
		static struct log_ratelimit rl_; \
		if ((lvl) <= log_level_current && log_ratelimit_allow(&rl_, (lvl))) \
			log_write((lvl), __VA_ARGS__); \
	} while (0)

#define log_at(lvl, ...) \
	do { if ((lvl) <= log_level_current) log_write((lvl), __VA_ARGS__); } while (0)
#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_at(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif

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

#define log_at(lvl, ...) \
	do { if ((lvl) <= log_level_current) log_write((lvl), __VA_ARGS__); } while (0)
#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_at(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif

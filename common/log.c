/*
 * log.c — stderr or syslog output with a level filter.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "common/log.h"

enum log_level log_level_current = LOG_LEVEL_INFO;
static int log_to_stderr = 1;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_init(int to_stderr, enum log_level level)
{
	log_to_stderr = to_stderr;
	log_level_current = level;
	if (!to_stderr)
		openlog("nfscached", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum log_level level)
{
	log_level_current = level;
}

int log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *log_level_name(enum log_level level)
{
	return level_names[level];
}

void log_write(enum log_level level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	va_list ap;

	va_start(ap, fmt);
	if (log_to_stderr) {
		struct timespec ts;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s: ", stamp, ts.tv_nsec / 1000000,
			level_names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(prio[level], fmt, ap);
	}
	va_end(ap);
}

int log_ratelimit_allow(struct log_ratelimit *rl, enum log_level level)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (rl->last_s != 0 && now - rl->last_s < 1.0) {
		rl->suppressed++;
		return 0;
	}
	if (rl->suppressed)
		log_write(level, "log: %u similar lines suppressed", rl->suppressed);
	rl->last_s = now;
	rl->suppressed = 0;
	return 1;
}

/*
 * main.c — nfscached: command line, configuration, start-up of every module
 * in order (and shutdown in reverse), signals, and the libev loop.
 * Exit status: 0 clean stop, 1 OS error at start-up, 2 configuration error.
 *
 * Under systemd (Type=notify) it reports READY=1 once listening with the
 * index open (the upstream may still be down), STATUS= lines when the
 * upstream's state changes, RELOADING=1 around a SIGHUP and STOPPING=1 at
 * SIGTERM.  A stop writes every dirty byte back first, for at most
 * upstream.timeout_ms; what the upstream did not take stays in the index
 * and is written back by the next start.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/conf.h"
#include "daemon/conn.h"
#include "daemon/ctl.h"
#include "common/log.h"
#include "daemon/nfsd.h"
#include "daemon/rpcbind_reg.h"
#include "common/stats.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"
#include "cache/cache.h"
#include "proto/drc.h"
#include "common/xalloc.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

#define DRC_ENTRIES 4096
#define STOP_GRACE_S 10.0     /* wait this long for calls in flight at SIGTERM */
#define STATUS_POLL_S 1.0     /* how often the upstream's state is checked for STATUS= */

struct nfsd nfsd;

static ev_signal sig_term, sig_int, sig_hup;
static ev_timer stop_timer;
static ev_timer status_timer;
static ev_tstamp stop_deadline;
static const char *status_reported;   /* upstream_state() of the last STATUS= */
static int stop_flushing;             /* 1 while the stop waits for write-back */
static const char *config_path;
static int config_path_given;

static void notify(const char *msg)
{
#ifdef HAVE_SYSTEMD
	sd_notify(0, msg);
#else
	(void)msg;
#endif
}

/* Tell the service manager the upstream's state and where we listen;
 * `prefix` ("READY=1\n" or "") goes in the same message. */
static void notify_status(const char *prefix)
{
	const char *state = upstream_state(nfsd.upstream);
	char msg[512];

	status_reported = state;
	snprintf(msg, sizeof(msg), "%sSTATUS=upstream %s%s; listening on %s", prefix,
		 strcmp(state, "up") == 0 ? "up" : "down",
		 strcmp(state, "connecting") == 0 ? ": connecting" : "",
		 listener_address(nfsd.listener));
	notify(msg);
}

static void status_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	if (!nfsd.stopping && upstream_state(nfsd.upstream) != status_reported)
		notify_status("");
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nfscached [-f|--foreground] [-c|--config FILE] [-o SECTION.KEY=VALUE]...\n"
		"                 [-t|--check-config] [-V|--version] [-h|--help]\n"
		"  -f  stay in the foreground, log to stderr\n"
		"  -c  configuration file (default %s)\n"
		"  -o  override one configuration key, after the file\n"
		"  -t  check the configuration, print the effective values, exit\n",
		CONFIG_DEFAULT_PATH);
}

static int load_config(struct nfsd_config *cfg, char **overrides, int n_overrides, FILE *err)
{
	config_defaults(cfg);
	if (config_load_file(cfg, config_path, !config_path_given, err) != 0)
		return -1;
	for (int i = 0; i < n_overrides; i++)
		if (config_apply_override(cfg, overrides[i], err) != 0)
			return -1;
	return config_finish(cfg, err);
}

static char **saved_overrides;
static int saved_n_overrides;

static void stop_flush_end(struct ev_loop *loop, const char *why)
{
	if (stats.cache_dirty_bytes)
		log_warning("main: %s: %llu dirty bytes not written back: kept in the index, "
			    "written back at the next start", why,
			    (unsigned long long)stats.cache_dirty_bytes);
	else
		log_info("main: every dirty byte written back");
	stop_flushing = 0;
	ev_timer_stop(loop, &stop_timer);
	ev_break(loop, EVBREAK_ALL);
}

/* May fire after the loop ended (the upstream's calls are completed when it
 * is freed): then there is nothing left to do. */
static void stop_flush_done(void *arg, int status)
{
	char why[64];

	(void)arg;
	if (!stop_flushing)
		return;
	if (status == 0)
		snprintf(why, sizeof(why), "written while stopping");
	else if (status == -ETIMEDOUT)
		snprintf(why, sizeof(why), "the upstream did not answer");
	else
		snprintf(why, sizeof(why), "the upstream refused the data (NFS status %d)", status);
	stop_flush_end(nfsd.loop, why);
}

static void stop_flush_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	stop_flush_end(loop, "no answer within upstream.timeout_ms");
}

/* Calls in flight are done: write every dirty byte back, for at most
 * upstream.timeout_ms, then end the loop (the index's last batch records
 * whatever stays dirty). */
static void stop_flush_start(struct ev_loop *loop)
{
	char msg[128];

	if (!nfsd.cache_on || stats.cache_dirty_bytes == 0 ||
	    writeback_flush_all(stop_flush_done, NULL) != 0) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	log_info("main: writing back %llu dirty bytes before stopping (at most %llu ms)",
		 (unsigned long long)stats.cache_dirty_bytes,
		 (unsigned long long)nfsd.cfg.upstream_timeout_ms);
	snprintf(msg, sizeof(msg), "STATUS=stopping: writing back %llu dirty bytes",
		 (unsigned long long)stats.cache_dirty_bytes);
	notify(msg);
	stop_flushing = 1;
	ev_timer_stop(loop, &stop_timer);
	ev_timer_init(&stop_timer, stop_flush_timeout_cb,
		      (double)nfsd.cfg.upstream_timeout_ms / 1000.0, 0.);
	ev_timer_start(loop, &stop_timer);
}

static void stop_check_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	if (stats.calls_in_flight == 0 || ev_now(loop) >= stop_deadline) {
		if (stats.calls_in_flight)
			log_warning("main: stopping with %llu calls still in flight",
				    (unsigned long long)stats.calls_in_flight);
		stop_flush_start(loop);
	}
}

static void sig_stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	if (nfsd.stopping) {
		log_warning("main: second signal %d: stopping now", w->signum);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	log_info("main: signal %d: stopping (no new connections, finishing calls in flight)",
		 w->signum);
	notify("STOPPING=1\nSTATUS=stopping: finishing calls in flight");
	nfsd.stopping = 1;
	listener_stop(nfsd.listener);
	stop_deadline = ev_now(loop) + STOP_GRACE_S;
	ev_timer_init(&stop_timer, stop_check_cb, 0., 0.05);
	ev_timer_again(loop, &stop_timer);
}

/* RELOADING=1 with the monotonic time systemd asks of it (sd_notify(3)). */
static void notify_reloading(void)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000);
	notify(msg);
}

static void sig_hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct nfsd_config fresh;

	(void)loop;
	(void)w;
	(void)revents;
	char *errors = NULL;
	size_t errors_len = 0;
	FILE *err = xopen_memstream(&errors, &errors_len);

	notify_reloading();
	int rc = load_config(&fresh, saved_overrides, saved_n_overrides, err);
	fclose(err);
	if (rc != 0) {
		char *save = NULL;
		for (char *l = strtok_r(errors, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			log_error("main: reload: %s", l);
		log_error("main: reload of %s failed: keeping the running configuration", config_path);
	} else {
		char *notes = NULL;
		size_t notes_len = 0;
		FILE *nf = xopen_memstream(&notes, &notes_len);
		char *save = NULL;

		config_reload(&nfsd.cfg, &fresh, nf);
		fclose(nf);
		if (nfsd.cache_on)
			cache_space_check();   /* thresholds and max_size may have changed */
		log_set_level(nfsd.cfg.log_level);
		for (char *l = strtok_r(notes, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			log_info("main: reload: %s", l);
		log_info("main: configuration reloaded from %s", config_path);
		free(notes);
	}
	config_free(&fresh);
	free(errors);
	notify_status("READY=1\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char **overrides = xcalloc((size_t)argc + 1, sizeof(char *));
	int n_overrides = 0, foreground = 0, check_only = 0, c, rc = 0;

	config_path = CONFIG_DEFAULT_PATH;
	while ((c = getopt_long(argc, argv, "fc:o:tVh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': foreground = 1; break;
		case 'c': config_path = optarg; config_path_given = 1; break;
		case 'o': overrides[n_overrides++] = optarg; break;
		case 't': check_only = 1; break;
		case 'V': printf("nfscached %s\n", PACKAGE_VERSION); goto out;
		case 'h': usage(stdout); goto out;
		default: usage(stderr); rc = 2; goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nfscached: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (load_config(&nfsd.cfg, overrides, n_overrides, stderr) != 0) {
		rc = 2;
		goto out;
	}
	saved_overrides = overrides;
	saved_n_overrides = n_overrides;
	if (check_only) {
		config_print(&nfsd.cfg, stdout);
		goto out;
	}

	log_init(foreground, nfsd.cfg.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* A local kernel client's writeback may depend on us: do not let the
	 * page cache throttle us against it (as knfsd for loopback mounts). */
	if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) != 0)
		log_debug("main: PR_SET_IO_FLUSHER: %s (needs CAP_SYS_RESOURCE)", strerror(errno));

	/* READ/WRITE buffers of up to 1 MiB come and go with every call: keep
	 * them in the heap for reuse instead of a fresh mmap (256 page faults
	 * per MiB) each time */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);

	/* every client connection and backing file is a descriptor */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}

	/* the largest READ/WRITE payload: a power of two leaving room for headers */
	nfsd.max_payload = 4096;
	while ((uint64_t)nfsd.max_payload * 2 + 1024 <= nfsd.cfg.server_max_record)
		nfsd.max_payload *= 2;

	nfsd.loop = ev_default_loop(EVFLAG_AUTO);
	nfsd.start_time = ev_now(nfsd.loop);
	/* random, never a time: two starts within a clock tick must differ, or a
	 * client would not resend what the first one lost */
	if (getrandom(nfsd.write_verf, sizeof(nfsd.write_verf), 0) != (ssize_t)sizeof(nfsd.write_verf)) {
		log_error("main: no random bytes for the write verifier: %s", strerror(errno));
		rc = 1;
		goto out;
	}
	nfsd.drc = drc_new(DRC_ENTRIES);
	nfsd.upstream = upstream_new(nfsd.loop, &nfsd.cfg, stderr);
	if (!nfsd.upstream) {
		rc = 2;
		goto stop;
	}
	nfsd.listener = listener_new(nfsd.loop, (struct sockaddr *)&nfsd.cfg.listen_addr,
				     nfsd.cfg.listen_addr_len);
	if (!nfsd.listener || ctl_init(nfsd.loop, nfsd.cfg.control_socket) != 0) {
		rc = 1;
		goto stop;
	}
	{
		char volume[2048];
		snprintf(volume, sizeof(volume), "%s:%s", upstream_server(nfsd.upstream),
			 upstream_export(nfsd.upstream));
		cache_set_free_hook(nfsd_object_release);
		if (cache_init(nfsd.loop, &nfsd.cfg.cache, volume) == 0 && writeback_init(nfsd.loop) == 0)
			nfsd.cache_on = 1;
		else
			log_error("main: cache in %s unusable: every call goes to the upstream",
				  nfsd.cfg.cache.dir);
	}
	if (nfsd.cfg.server_rpcbind &&
	    rpcbind_register(listener_sockaddr(nfsd.listener), listener_sockaddr_len(nfsd.listener)) != 0) {
		rc = 1;
		goto stop;
	}
	if (!foreground) {
		/* detach only now, so that start-up errors reach the caller */
		if (daemon(0, 0) != 0) {
			log_error("main: cannot detach: %s", strerror(errno));
			rc = 1;
			goto stop;
		}
		ev_loop_fork(nfsd.loop);
	}
	log_info("main: nfscached %s listening on %s (NFS 3 and MOUNT 3), upstream %s, control %s",
		 PACKAGE_VERSION, listener_address(nfsd.listener), nfsd.cfg.upstream_url,
		 nfsd.cfg.control_socket);
	upstream_start(nfsd.upstream);

	ev_signal_init(&sig_term, sig_stop_cb, SIGTERM);
	ev_signal_init(&sig_int, sig_stop_cb, SIGINT);
	ev_signal_init(&sig_hup, sig_hup_cb, SIGHUP);
	ev_signal_start(nfsd.loop, &sig_term);
	ev_signal_start(nfsd.loop, &sig_int);
	ev_signal_start(nfsd.loop, &sig_hup);
	ev_timer_init(&status_timer, status_poll_cb, STATUS_POLL_S, STATUS_POLL_S);
	ev_timer_start(nfsd.loop, &status_timer);
	/* listening, the index open: calls are answered (from the cache, or
	 * JUKEBOX while the upstream is down) */
	notify_status("READY=1\n");

	ev_run(nfsd.loop, 0);
	stop_flushing = 0;
	ev_timer_stop(nfsd.loop, &status_timer);
	ev_timer_stop(nfsd.loop, &stop_timer);
	log_info("main: stopped");

stop:
	rpcbind_unregister();
	ctl_finalise();
	conn_close_all();
	listener_free(nfsd.listener);
	writeback_finalise();
	upstream_free(nfsd.upstream);
	nfsd.upstream = NULL;
	if (nfsd.cache_on)
		cache_finalise();
	drc_free(nfsd.drc);
	ev_loop_destroy(nfsd.loop);
out:
	config_free(&nfsd.cfg);
	free(overrides);
	return rc;
}

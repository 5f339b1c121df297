/*
 * main.c — nfscached: command line, configuration, start-up of every module
 * in order (and shutdown in reverse), signals, and the libev loop.
 *
 * main() reads the command line (main_args_parse) and the configuration
 * (main_conf_load), sets up the process (main_process_setup: logging,
 * SIGPIPE, PR_SET_IO_FLUSHER, malloc, RLIMIT_NOFILE), starts the steps of
 * main_steps[] in order, runs the loop, and stops the steps in reverse
 * (chrony main.c).
 * Exit status: 0 clean stop, 1 OS error at start-up, 2 configuration error,
 * 3 internal error.
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
#include "daemon/metrics.h"
#include "common/log.h"
#include "common/macros.h"
#include "daemon/nfsd.h"
#include "daemon/rpcbind_reg.h"
#include "common/stats.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"
#include "cache/cache.h"
#include "cache/meta.h"
#include "proto/drc.h"
#include "common/xalloc.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

/* exit statuses at start-up (a clean stop is EXIT_SUCCESS) */
enum {
	EXIT_OS = 1,          /* the system refused something: a socket, a fork */
	EXIT_CONF = 2,        /* the configuration or the command line */
	EXIT_INTERNAL = 3,    /* a bug */
};

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

/* The command line (main_args_parse()); kept for SIGHUP's reload. */
struct main_args {
	int foreground;
	int check_only;               /* -t */
	const char *conf_path;
	int conf_path_given;          /* -c: the file must exist */
	char **overrides;             /* -o SECTION.KEY=VALUE, in order; malloc'd */
	int n_overrides;
};

static struct main_args main_args;

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
		CONF_DEFAULT_PATH);
}

/* The defaults, then the file, then each -o: 0, or -1 after printing to `err`. */
static int main_conf_load(struct nfsd_conf *cfg, const struct main_args *args, FILE *err)
{
	conf_defaults(cfg);
	if (conf_load_file(cfg, args->conf_path, !args->conf_path_given, err) != 0)
		return -1;
	for (int i = 0; i < args->n_overrides; i++)
		if (conf_apply_override(cfg, args->overrides[i], err) != 0)
			return -1;
	return conf_finish(cfg, err);
}

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

/* One log line per line of `text` ("a\nb\n"), each after `prefix`. */
static void log_each_line(enum log_level level, const char *prefix, char *text)
{
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		log_at(level, "%s%s", prefix, l);
}

/* SIGHUP: read the file and the -o overrides again, keep the running
 * configuration when they do not load. */
static void sig_hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct nfsd_conf fresh;
	char *errors = NULL, *notes = NULL;
	size_t errors_len = 0, notes_len = 0;
	FILE *err = xopen_memstream(&errors, &errors_len);

	(void)loop;
	(void)w;
	(void)revents;
	notify_reloading();
	int rc = main_conf_load(&fresh, &main_args, err);
	fclose(err);
	if (rc != 0) {
		log_each_line(LOG_LEVEL_ERROR, "main: reload: ", errors);
		log_error("main: reload of %s failed: keeping the running configuration",
			  main_args.conf_path);
	} else {
		FILE *nf = xopen_memstream(&notes, &notes_len);
		conf_reload(&nfsd.cfg, &fresh, nf);
		fclose(nf);
		if (nfsd.cache_on)
			cache_space_check();   /* thresholds and max_size may have changed */
		conn_limits_changed();         /* server.partial_max may be lower */
		log_set_level(nfsd.cfg.log_level);
		log_each_line(LOG_LEVEL_INFO, "main: reload: ", notes);
		log_info("main: configuration reloaded from %s", main_args.conf_path);
	}
	conf_free(&fresh);
	free(notes);
	free(errors);
	notify_status("READY=1\n");
}

/* ---- the command line ---------------------------------------------- */

/* Parse argv into *args.  Returns -1 to go on, or the exit status (0 after
 * -V or -h, 2 after a usage error). */
static int main_args_parse(int argc, char **argv, struct main_args *args)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	args->conf_path = CONF_DEFAULT_PATH;
	args->overrides = xcalloc((size_t)argc + 1, sizeof(char *));
	while ((opt = getopt_long(argc, argv, "fc:o:tVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'f': args->foreground = 1; break;
		case 'c': args->conf_path = optarg; args->conf_path_given = 1; break;
		case 'o': args->overrides[args->n_overrides++] = optarg; break;
		case 't': args->check_only = 1; break;
		case 'V': printf("nfscached %s\n", PACKAGE_VERSION); return EXIT_SUCCESS;
		case 'h': usage(stdout); return EXIT_SUCCESS;
		default: usage(stderr); return EXIT_CONF;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nfscached: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return EXIT_CONF;
	}
	return -1;
}

/* The largest READ/WRITE payload for records of up to `max_record` bytes:
 * a power of two leaving room for headers. */
static uint32_t max_payload_for(uint64_t max_record)
{
	uint32_t payload = 4096;

	while ((uint64_t)payload * 2 + 1024 <= max_record)
		payload *= 2;
	return payload;
}

/* ---- the process: nothing here is undone -------------------------- */

static void main_process_setup(int foreground)
{
	struct rlimit nofile;

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
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
}

/* ---- the modules: started in order, stopped in reverse -------------- */

static int main_loop_start(void)
{
	nfsd.loop = ev_default_loop(EVFLAG_AUTO);
	nfsd.start_time = ev_now(nfsd.loop);
	return 0;
}

static void main_loop_stop(void)
{
	ev_loop_destroy(nfsd.loop);
}

/* random, never a time: two starts within a clock tick must differ, or a
 * client would not resend what the first one lost */
static int main_write_verf_start(void)
{
	if (getrandom(nfsd.write_verf, sizeof(nfsd.write_verf), 0) != (ssize_t)sizeof(nfsd.write_verf)) {
		log_error("main: no random bytes for the write verifier: %s", strerror(errno));
		return EXIT_OS;
	}
	return 0;
}

static int main_drc_start(void)
{
	nfsd.drc = drc_new(DRC_ENTRIES);
	return 0;
}

static void main_drc_stop(void)
{
	drc_free(nfsd.drc);
}

/* The namespace cache: in memory only, ready before any call arrives;
 * freed after the upstream, whose queued calls complete into it. */
static int main_meta_start(void)
{
	meta_init(nfsd.loop, &nfsd.cfg.cache);
	return 0;
}

static void main_cache_lookups_stop(void)
{
	if (nfsd.cache_on)
		cache_lookups_finish();
}

static void main_cache_stop(void)
{
	if (nfsd.cache_on)
		cache_finalise();
}

/* Parses upstream.url; connecting waits for main_upstream_connect(). */
static int main_upstream_start(void)
{
	nfsd.upstream = upstream_new(nfsd.loop, &nfsd.cfg, stderr);
	return nfsd.upstream ? 0 : EXIT_CONF;
}

static void main_upstream_stop(void)
{
	upstream_free(nfsd.upstream);
	nfsd.upstream = NULL;
}

static int main_listener_start(void)
{
	nfsd.listener = listener_new(nfsd.loop, (struct sockaddr *)&nfsd.cfg.listen_addr,
				     nfsd.cfg.listen_addr_len);
	return nfsd.listener ? 0 : EXIT_OS;
}

/* The connections it accepted, then the listener. */
static void main_listener_stop(void)
{
	conn_close_all();
	listener_free(nfsd.listener);
}

static int main_ctl_start(void)
{
	return ctl_init(nfsd.loop, nfsd.cfg.control_socket) == 0 ? 0 : EXIT_OS;
}

/* An unusable cache is no error: every call goes to the upstream. */
static int main_cache_start(void)
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
	return 0;
}

static int main_metrics_start(void)
{
	return metrics_init(nfsd.loop, &nfsd.cfg) == 0 ? 0 : EXIT_OS;
}

static int main_rpcbind_start(void)
{
	if (nfsd.cfg.server_rpcbind &&
	    rpcbind_register(listener_sockaddr(nfsd.listener), listener_sockaddr_len(nfsd.listener)) != 0)
		return EXIT_OS;
	return 0;
}

/* Detach only now, so that start-up errors (the configuration, the
 * listening and control sockets, rpcbind) reach the caller; but before
 * any thread is started, as only the forking thread lives on in the child.
 * A cache that cannot start is logged, never fatal. */
static int main_detach(void)
{
	if (main_args.foreground)
		return 0;
	if (daemon(0, 0) != 0) {
		log_error("main: cannot detach: %s", strerror(errno));
		return EXIT_OS;
	}
	ev_loop_fork(nfsd.loop);
	return 0;
}

static int main_upstream_connect(void)
{
	log_info("main: nfscached %s listening on %s (NFS 3 and MOUNT 3), upstream %s, control %s",
		 PACKAGE_VERSION, listener_address(nfsd.listener), nfsd.cfg.upstream_url,
		 nfsd.cfg.control_socket);
	upstream_start(nfsd.upstream);
	return 0;
}

static int main_signals_start(void)
{
	ev_signal_init(&sig_term, sig_stop_cb, SIGTERM);
	ev_signal_init(&sig_int, sig_stop_cb, SIGINT);
	ev_signal_init(&sig_hup, sig_hup_cb, SIGHUP);
	ev_signal_start(nfsd.loop, &sig_term);
	ev_signal_start(nfsd.loop, &sig_int);
	ev_signal_start(nfsd.loop, &sig_hup);
	return 0;
}

static int main_status_start(void)
{
	ev_timer_init(&status_timer, status_poll_cb, STATUS_POLL_S, STATUS_POLL_S);
	ev_timer_start(nfsd.loop, &status_timer);
	return 0;
}

/* The status poll and the stop's own timers. */
static void main_status_stop(void)
{
	stop_flushing = 0;
	ev_timer_stop(nfsd.loop, &status_timer);
	ev_timer_stop(nfsd.loop, &stop_timer);
}

struct main_step {
	const char *name;      /* for the reader and the debugger */
	int (*start)(void);    /* 0, or the exit status after logging; NULL: nothing */
	void (*stop)(void);    /* NULL: nothing to undo here */
};

/*
 * Read down for the start, up for the stop (chrony main.c).  A step whose
 * start fails is stopped too, with every step above it; the steps below it
 * are neither started nor stopped.  An entry with no start holds the stop
 * of a step further down that must be undone later than the mirror order
 * would.
 */
static const struct main_step main_steps[] = {
	{ "event loop", main_loop_start, main_loop_stop },
	{ "write verifier", main_write_verf_start, NULL },
	{ "duplicate request cache", main_drc_start, main_drc_stop },
	{ "namespace cache", main_meta_start, meta_finalise },
	/* Exception: the cache is started below, after the upstream (its
	 * volume is named after the upstream's server and export), but
	 * finalised only here, after the upstream is freed: freeing it
	 * completes the calls still queued, and their callbacks use cache
	 * objects. */
	{ "cache (finalised here)", NULL, main_cache_stop },
	{ "upstream", main_upstream_start, main_upstream_stop },
	/* Exception: write-back is started with the cache below but finalised
	 * here, once the connections and the control socket are gone (their
	 * calls and commands may wait on it) and before the upstream is freed. */
	{ "write-back (finalised here)", NULL, writeback_finalise },
	/* Exception: the cache's lookups end here, before write-back and the
	 * upstream go: the calls waiting for one are woken and go upstream. */
	{ "cache lookups (finished here)", NULL, main_cache_lookups_stop },
	{ "listener and connections", main_listener_start, main_listener_stop },
	{ "control socket", main_ctl_start, ctl_finalise },
	{ "metrics endpoint", main_metrics_start, metrics_finalise },
	{ "rpcbind registration", main_rpcbind_start, rpcbind_unregister },
	/* Before the cache: daemon(3) forks, and a thread (the cache's
	 * workers) does not survive a fork.  Nothing above starts one. */
	{ "detach", main_detach, NULL },
	{ "cache and write-back", main_cache_start, NULL },
	/* Connecting is undone by upstream_free() ("upstream" above). */
	{ "upstream connection", main_upstream_connect, NULL },
	/* Exception: never stopped, so that a signal during the teardown is
	 * still caught (and ignored) rather than fatal; the loop's destruction
	 * ends them. */
	{ "signals", main_signals_start, NULL },
	{ "status poll", main_status_start, main_status_stop },
};

/* Start main_steps in order until one fails.  Returns 0 or its exit status;
 * *n_reached is the number of steps to stop (the failed one included). */
static int main_start(size_t *n_reached)
{
	for (size_t i = 0; i < ARRAY_SIZE(main_steps); i++) {
		int rc = main_steps[i].start ? main_steps[i].start() : 0;
		*n_reached = i + 1;
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Stop the first n_reached of main_steps, the last first. */
static void main_stop(size_t n_reached)
{
	while (n_reached > 0) {
		n_reached--;
		if (main_steps[n_reached].stop)
			main_steps[n_reached].stop();
	}
}

/* Listening, the index open: calls are answered (from the cache, or
 * JUKEBOX while the upstream is down) until a signal ends the loop. */
static void main_run(void)
{
	notify_status("READY=1\n");
	ev_run(nfsd.loop, 0);
	log_info("main: stopped");
}

int main(int argc, char **argv)
{
	size_t n_reached = 0;
	int rc = main_args_parse(argc, argv, &main_args);

	if (rc >= 0)
		goto out;
	rc = EXIT_SUCCESS;
	if (main_conf_load(&nfsd.cfg, &main_args, stderr) != 0) {
		rc = EXIT_CONF;
		goto out;
	}
	if (main_args.check_only) {
		conf_print(&nfsd.cfg, stdout);
		goto out;
	}
	nfsd.max_payload = max_payload_for(nfsd.cfg.server_max_record);
	main_process_setup(main_args.foreground);
	rc = main_start(&n_reached);
	if (rc == 0)
		main_run();
	main_stop(n_reached);
out:
	conf_free(&nfsd.cfg);
	free(main_args.overrides);
	return rc;
}

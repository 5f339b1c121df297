/*
 * conf.h — the configuration: every key of the interface contract, read
 * from an INI file (libinih) and `-o section.key=value` overrides, validated
 * against one table of {section, key, type, min, max, default}
 * (chrony conf.c, cachefilesd.conf).  Errors are reported as
 * "FILE:LINE: message" and make start-up exit with status 2.
 */
#ifndef NFSCACHED_CONF_H
#define NFSCACHED_CONF_H

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "cache/cache_config.h"
#include "daemon/netaddr.h"

#define CONF_DEFAULT_PATH SYSCONFDIR "/nfscached.conf"

enum squash_mode { SQUASH_NONE = 0, SQUASH_ROOT = 1, SQUASH_ALL = 2 };
/* What an AUTH_NONE call other than NULL, MOUNT EXPORT or DUMP gets. */
enum auth_none_mode {
	AUTH_NONE_REFUSE = 0,   /* AUTH_TOOWEAK, as knfsd with sec=sys */
	AUTH_NONE_NOBODY = 1,   /* forwarded as uid and gid 65534 */
};

struct nfsd_conf {
	/* [server] */
	char *server_listen;            /* "ADDR:PORT" */
	char *server_allow;             /* client networks */
	int server_secure;              /* bool: reserved source ports only */
	int server_squash;              /* enum squash_mode */
	int server_rpcbind;             /* bool */
	uint64_t server_max_record;     /* bytes */
	int server_auth_none;           /* enum auth_none_mode */
	uint64_t server_partial_max;    /* bytes of partly received records, all connections */
	/* [upstream] */
	char *upstream_url;
	char *upstream_exports;         /* space-separated paths; "" = any */
	uint64_t upstream_timeout_ms;
	uint64_t upstream_connections;  /* TCP connections to the upstream, 1..16 (nconnect) */
	/* [cache] */
	struct cache_config cache;
	/* [control] */
	char *control_socket;
	/* [log] */
	int log_level;                  /* enum log_level */
	/* [metrics] */
	char *metrics_listen;           /* "ADDR:PORT" of the HTTP endpoint; "" = off */

	/* derived at load time */
	struct sockaddr_storage listen_addr;
	socklen_t listen_addr_len;
	struct sockaddr_storage metrics_addr;   /* metrics.listen; unset when it is "" */
	socklen_t metrics_addr_len;
	struct netaddr_acl allow_acl;
	const char *source;             /* file the values came from */
#define CONF_MAX_KEYS 48
	int key_line[CONF_MAX_KEYS];  /* line of each key in `source`, 0 if not there */
	const char *key_override[CONF_MAX_KEYS];  /* the -o that set it last, or NULL */
};

/* Fill `cfg` with the defaults.  Strings are malloc'd; free with conf_free(). */
void conf_defaults(struct nfsd_conf *cfg);

/*
 * Read `path` (one key per line, no indentation, comments on their own lines)
 * over the current values.  Returns 0, or -1 after printing every error as
 * "PATH:LINE: message" to `err`.  A missing file is an error unless
 * `missing_ok`.
 */
int conf_load_file(struct nfsd_conf *cfg, const char *path, int missing_ok, FILE *err);

/* Apply one "section.key=value" override; -1 after printing
 * "-o section.key=value: message" to `err`. */
int conf_apply_override(struct nfsd_conf *cfg, const char *assignment, FILE *err);

/* Cross-key checks and derived values (listen address, allow list, threshold
 * order 0 <= stop < cull < run < 100).  Returns 0 or -1 after printing. */
int conf_finish(struct nfsd_conf *cfg, FILE *err);

/*
 * SIGHUP: take the keys that can change at run time from `fresh` (a loaded
 * and finished configuration) into `running`, and write one line per changed
 * key to `notes` — "takes effect after a restart" for the others (listen
 * address, record size, rpcbind, upstream URL and connections, cache dir
 * and page size, control socket, metrics address).  `fresh` must still be
 * freed; it keeps the old values.
 */
void conf_reload(struct nfsd_conf *running, struct nfsd_conf *fresh, FILE *notes);

/* Print the effective configuration in the file's own syntax (`-t`). */
void conf_print(const struct nfsd_conf *cfg, FILE *out);

void conf_free(struct nfsd_conf *cfg);

/* Parse a size with an optional k/M/G suffix (powers of 1024) into bytes.
 * Returns 0 or -EINVAL / -ERANGE. */
int conf_parse_size(const char *s, uint64_t *bytes);

#endif

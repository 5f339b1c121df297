/*
 * config.c — the configuration table, its parsers and the INI reader glue.
 * Owns struct nfsd_conf's contents; knows nothing of the modules that use
 * the values.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <ifaddrs.h>
#include <ini.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "daemon/conf.h"
#include "common/log.h"
#include "common/xalloc.h"

enum conf_type { T_STRING, T_BOOL, T_UINT, T_SIZE, T_MS, T_PERCENT, T_ENUM };

struct conf_key {
	const char *section;
	const char *key;
	enum conf_type type;
	size_t offset;            /* into struct nfsd_conf */
	uint64_t min, max;        /* numeric types */
	const char *def;          /* default, in file syntax */
	const char *const *names; /* T_ENUM: names, index = value; NULL-terminated */
	int restart;              /* a change takes effect only after a restart */
};

static const char *const squash_names[] = { "none", "root", "all", NULL };
static const char *const auth_none_names[] = { "refuse", "nobody", NULL };
static const char *const write_mode_names[] = { "writeback", "writethrough", NULL };
static const char *const commit_names[] = { "upstream", "local", NULL };
static const char *const log_names[] = { "error", "warning", "info", "debug", NULL };

#define OFF(f) offsetof(struct nfsd_conf, f)
#define GiB (1024ull * 1024 * 1024)

static const struct conf_key conf_keys[] = {
	{ "server", "listen", T_STRING, OFF(server_listen), 0, 0, "127.0.0.1:2049", NULL, 1 },
	{ "server", "allow", T_STRING, OFF(server_allow), 0, 0, "127.0.0.0/8 ::1", NULL, 0 },
	{ "server", "secure", T_BOOL, OFF(server_secure), 0, 1, "yes", NULL, 0 },
	{ "server", "squash", T_ENUM, OFF(server_squash), 0, 0, "none", squash_names, 0 },
	{ "server", "rpcbind", T_BOOL, OFF(server_rpcbind), 0, 1, "no", NULL, 1 },
	{ "server", "max_record", T_SIZE, OFF(server_max_record), 64 * 1024, 64 * 1024 * 1024, "1088k", NULL, 1 },
	{ "server", "auth_none", T_ENUM, OFF(server_auth_none), 0, 0, "refuse", auth_none_names, 0 },
	{ "server", "partial_max", T_SIZE, OFF(server_partial_max), 64 * 1024, 64 * GiB, "32M", NULL, 0 },
	{ "upstream", "url", T_STRING, OFF(upstream_url), 0, 0, "", NULL, 1 },
	{ "upstream", "exports", T_STRING, OFF(upstream_exports), 0, 0, "", NULL, 0 },
	{ "upstream", "timeout_ms", T_MS, OFF(upstream_timeout_ms), 100, 24ull * 3600 * 1000, "30000", NULL, 0 },
	{ "upstream", "connections", T_UINT, OFF(upstream_connections), 1, 16, "4", NULL, 1 },
	{ "cache", "dir", T_STRING, OFF(cache.dir), 0, 0, "/var/cache/nfscached", NULL, 1 },
	{ "cache", "page_size", T_SIZE, OFF(cache.page_size), 512, 1024 * 1024, "4096", NULL, 1 },
	{ "cache", "partial_pages", T_BOOL, OFF(cache.partial_pages), 0, 1, "yes", NULL, 0 },
	/* a restart key: dirty data must never meet WRITEs that bypass it */
	{ "cache", "write_mode", T_ENUM, OFF(cache.write_mode), 0, 0, "writeback", write_mode_names, 1 },
	{ "cache", "dirty_expire_ms", T_MS, OFF(cache.dirty_expire_ms), 0, 24ull * 3600 * 1000, "5000", NULL, 0 },
	{ "cache", "max_dirty", T_SIZE, OFF(cache.max_dirty), 0, 1024 * GiB, "256M", NULL, 0 },
	{ "cache", "readahead", T_SIZE, OFF(cache.readahead), 0, 1 * GiB, "1M", NULL, 0 },
	{ "cache", "readahead_max", T_SIZE, OFF(cache.readahead_max), 0, 1 * GiB, "8M", NULL, 0 },
	{ "cache", "commit", T_ENUM, OFF(cache.commit), 0, 0, "upstream", commit_names, 0 },
	{ "cache", "writeback_in_flight_max", T_SIZE, OFF(cache.writeback_in_flight_max), 64 * 1024, 1 * GiB, "64M", NULL, 0 },
	{ "cache", "acregmin", T_UINT, OFF(cache.acregmin), 0, 3600, "3", NULL, 0 },
	{ "cache", "acregmax", T_UINT, OFF(cache.acregmax), 0, 3600, "60", NULL, 0 },
	{ "cache", "acdirmin", T_UINT, OFF(cache.acdirmin), 0, 3600, "30", NULL, 0 },
	{ "cache", "acdirmax", T_UINT, OFF(cache.acdirmax), 0, 3600, "60", NULL, 0 },
	{ "cache", "metadata", T_BOOL, OFF(cache.metadata), 0, 1, "yes", NULL, 0 },
	{ "cache", "metadata_max", T_UINT, OFF(cache.metadata_max), 0, 100000000, "1000000", NULL, 0 },
	/* objects kept in memory when not in use; the index holds every object */
	{ "cache", "resident_max", T_UINT, OFF(cache.resident_max), 1, 1000000000, "160000", NULL, 0 },
	{ "cache", "max_size", T_SIZE, OFF(cache.max_size), 0, UINT64_MAX, "0", NULL, 0 },
	{ "cache", "brun", T_PERCENT, OFF(cache.brun), 0, 99, "10%", NULL, 0 },
	{ "cache", "bcull", T_PERCENT, OFF(cache.bcull), 0, 99, "7%", NULL, 0 },
	{ "cache", "bstop", T_PERCENT, OFF(cache.bstop), 0, 99, "3%", NULL, 0 },
	{ "cache", "frun", T_PERCENT, OFF(cache.frun), 0, 99, "10%", NULL, 0 },
	{ "cache", "fcull", T_PERCENT, OFF(cache.fcull), 0, 99, "7%", NULL, 0 },
	{ "cache", "fstop", T_PERCENT, OFF(cache.fstop), 0, 99, "3%", NULL, 0 },
	/* given to a backing file when it is created */
	{ "cache", "extent_hint", T_SIZE, OFF(cache.extent_hint), 0, 1 * GiB, "1M", NULL, 1 },
	{ "control", "socket", T_STRING, OFF(control_socket), 0, 0, "/run/nfscached/ctl.sock", NULL, 1 },
	{ "log", "level", T_ENUM, OFF(log_level), 0, 0, "info", log_names, 0 },
	/* the HTTP endpoint of the Prometheus metrics; empty: none */
	{ "metrics", "listen", T_STRING, OFF(metrics_listen), 0, 0, "", NULL, 1 },
};
#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))
_Static_assert(N_KEYS <= CONF_MAX_KEYS, "raise CONF_MAX_KEYS");

int conf_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	uint64_t mult = 1;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mult = 1024; end++; break;
	case 'm': case 'M': mult = 1024 * 1024; end++; break;
	case 'g': case 'G': mult = GiB; end++; break;
	default: return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*bytes = v * mult;
	return 0;
}

static int parse_uint(const char *s, uint64_t *v, const char *suffix)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (suffix && strcmp(end, suffix) == 0)
		return 0;
	return *end ? -EINVAL : 0;
}

static const struct conf_key *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(conf_keys[i].section, section) == 0 && strcmp(conf_keys[i].key, key) == 0)
			return &conf_keys[i];
	return NULL;
}

static int section_known(const char *section)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(conf_keys[i].section, section) == 0)
			return 1;
	return 0;
}

/* Set one value; on error writes a message (no location) into msg. */
static int set_value(struct nfsd_conf *cfg, const struct conf_key *k, const char *value,
		     char *msg, size_t msglen)
{
	void *field = (char *)cfg + k->offset;
	uint64_t v = 0;
	int rc;

	switch (k->type) {
	case T_STRING:
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		return 0;
	case T_BOOL:
		if (!strcmp(value, "yes") || !strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "on"))
			*(int *)field = 1;
		else if (!strcmp(value, "no") || !strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "off"))
			*(int *)field = 0;
		else {
			snprintf(msg, msglen, "%s.%s: expected yes or no, got \"%s\"", k->section, k->key, value);
			return -1;
		}
		return 0;
	case T_ENUM:
		for (int i = 0; k->names[i]; i++) {
			if (strcmp(value, k->names[i]) == 0) {
				*(int *)field = i;
				return 0;
			}
		}
		{
			char list[128] = "";
			for (int i = 0; k->names[i]; i++) {
				strncat(list, i ? " | " : "", sizeof(list) - strlen(list) - 1);
				strncat(list, k->names[i], sizeof(list) - strlen(list) - 1);
			}
			snprintf(msg, msglen, "%s.%s: expected %s, got \"%s\"", k->section, k->key, list, value);
		}
		return -1;
	case T_UINT:
		rc = parse_uint(value, &v, NULL);
		break;
	case T_MS:
		rc = parse_uint(value, &v, "ms");
		break;
	case T_PERCENT:
		rc = parse_uint(value, &v, "%");
		break;
	case T_SIZE:
		rc = conf_parse_size(value, &v);
		break;
	default:
		abort();
	}
	if (rc != 0) {
		static const char *const what[] = { "", "", "a number", "a size (bytes, or with k/M/G)",
						     "milliseconds", "a percentage (N%)", "" };
		snprintf(msg, msglen, "%s.%s: expected %s, got \"%s\"", k->section, k->key, what[k->type], value);
		return -1;
	}
	if (v < k->min || v > k->max) {
		snprintf(msg, msglen, "%s.%s: %s is out of range %" PRIu64 "..%" PRIu64, k->section, k->key,
			 value, k->min, k->max);
		return -1;
	}
	*(uint64_t *)field = v;
	return 0;
}

void conf_defaults(struct nfsd_conf *cfg)
{
	char msg[256];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_KEYS; i++)
		if (set_value(cfg, &conf_keys[i], conf_keys[i].def, msg, sizeof(msg)) != 0)
			abort();   /* a default that fails its own table is a programmer error */
	cfg->source = "(defaults)";
}

struct load_ctx {
	struct nfsd_conf *cfg;
	char msg[320];          /* first error */
	int failed;
	unsigned char seen[N_KEYS];
};

static int ini_handler_cb(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *ctx = user;
	const struct conf_key *k = find_key(section, name);

	if (ctx->failed)
		return 0;
	if (!k) {
		if (!section_known(section))
			snprintf(ctx->msg, sizeof(ctx->msg), "unknown section [%s]", section);
		else
			snprintf(ctx->msg, sizeof(ctx->msg), "unknown key \"%s\" in [%s]", name, section);
		ctx->failed = 1;
		return 0;
	}
	size_t idx = (size_t)(k - conf_keys);
	if (ctx->seen[idx]) {
		snprintf(ctx->msg, sizeof(ctx->msg), "%s.%s given twice", section, name);
		ctx->failed = 1;
		return 0;
	}
	ctx->seen[idx] = 1;
	if (set_value(ctx->cfg, k, value, ctx->msg, sizeof(ctx->msg)) != 0) {
		ctx->failed = 1;
		return 0;
	}
	return 1;
}

#define INI_LINE_MAX 198   /* libinih (Debian, INI_MAX_LINE 200) splits longer lines */

/*
 * The checks libinih cannot make for us, on the raw lines: lines it would
 * split, indented lines it would join to the previous value, inline ";"
 * comments it would cut off silently, section headers without "]".  Also
 * records the line of every key, for messages about values found wrong later.
 * Returns 0, or the failing line number with the message in msg.
 */
static int prescan(FILE *f, struct nfsd_conf *cfg, char *msg, size_t msglen)
{
	char *line = NULL, section[64] = "";
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, rc = 0;

	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n > INI_LINE_MAX) {
			snprintf(msg, msglen, "line longer than %d characters", INI_LINE_MAX);
			rc = lineno;
			break;
		}
		const char *p = line + strspn(line, " \t");
		if (*p == '\0' || *p == '#' || *p == ';')
			continue;
		if (p != line) {
			snprintf(msg, msglen, "indented line (it would continue the previous value): "
				 "write one key per line, unindented");
			rc = lineno;
		} else if (*p == '[') {
			const char *close = strchr(p, ']');
			if (!close || (size_t)(close - p - 1) >= sizeof(section)) {
				snprintf(msg, msglen, "section header without \"]\"");
				rc = lineno;
			} else {
				memcpy(section, p + 1, close - p - 1);
				section[close - p - 1] = '\0';
			}
		} else {
			const char *eq = strchr(p, '=');
			if (eq && (strstr(eq, " ;") || strstr(eq, "\t;") || strstr(eq, " #") ||
				   strstr(eq, "\t#"))) {
				snprintf(msg, msglen, "comment after a value (put comments on their own line)");
				rc = lineno;
			} else if (eq) {
				char key[64];
				size_t kl = (size_t)(eq - p);
				while (kl > 0 && (p[kl - 1] == ' ' || p[kl - 1] == '\t'))
					kl--;
				if (kl < sizeof(key)) {
					memcpy(key, p, kl);
					key[kl] = '\0';
					const struct conf_key *k = find_key(section, key);
					if (k && !cfg->key_line[k - conf_keys])
						cfg->key_line[k - conf_keys] = lineno;
				}
			}
		}
	}
	free(line);
	return rc;
}

int conf_load_file(struct nfsd_conf *cfg, const char *path, int missing_ok, FILE *err)
{
	struct load_ctx ctx = { .cfg = cfg };
	struct stat st;
	FILE *f = fopen(path, "r");
	int line;

	if (!f) {
		if (missing_ok && errno == ENOENT)
			return 0;
		fprintf(err, "%s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(err, "%s: is a directory, not a configuration file\n", path);
		fclose(f);
		return -1;
	}
	memset(cfg->key_line, 0, sizeof(cfg->key_line));
	line = prescan(f, cfg, ctx.msg, sizeof(ctx.msg));
	if (line == 0) {
		rewind(f);
		line = ini_parse_file(f, ini_handler_cb, &ctx);
		if (line > 0 && !ctx.failed)
			snprintf(ctx.msg, sizeof(ctx.msg), "syntax error (expected \"[section]\" or \"key = value\")");
	}
	fclose(f);
	if (line < 0) {
		fprintf(err, "%s: cannot read\n", path);
		return -1;
	}
	if (line > 0) {
		fprintf(err, "%s:%d: %s\n", path, line, ctx.msg);
		return -1;
	}
	cfg->source = path;
	return 0;
}

int conf_apply_override(struct nfsd_conf *cfg, const char *assignment, FILE *err)
{
	char section[64], key[64], msg[320];
	const char *dot = strchr(assignment, '.');
	const char *eq = strchr(assignment, '=');

	if (!dot || !eq || dot > eq || (size_t)(dot - assignment) >= sizeof(section) ||
	    (size_t)(eq - dot - 1) >= sizeof(key)) {
		fprintf(err, "-o %s: expected SECTION.KEY=VALUE\n", assignment);
		return -1;
	}
	memcpy(section, assignment, dot - assignment);
	section[dot - assignment] = '\0';
	memcpy(key, dot + 1, eq - dot - 1);
	key[eq - dot - 1] = '\0';
	const struct conf_key *k = find_key(section, key);
	if (!k) {
		fprintf(err, "-o %s: unknown key %s.%s\n", assignment, section, key);
		return -1;
	}
	if (set_value(cfg, k, eq + 1, msg, sizeof(msg)) != 0) {
		fprintf(err, "-o %s: %s\n", assignment, msg);
		return -1;
	}
	cfg->key_override[k - conf_keys] = assignment;
	return 0;
}

/* Where `section.key` got its value: "-o ASSIGNMENT", "FILE:LINE" or "FILE". */
static const char *key_origin(const struct nfsd_conf *cfg, const char *section,
			      const char *key, char *buf, size_t len)
{
	const struct conf_key *k = find_key(section, key);
	size_t i = (size_t)(k - conf_keys);

	if (cfg->key_override[i])
		snprintf(buf, len, "-o %s", cfg->key_override[i]);
	else if (cfg->key_line[i])
		snprintf(buf, len, "%s:%d", cfg->source, cfg->key_line[i]);
	else
		snprintf(buf, len, "%s", cfg->source);
	return buf;
}

/* The origin of whichever of `keys` was set most specifically: an -o
 * override if any was, else the line of one set in the file, else the file. */
static const char *keys_origin(const struct nfsd_conf *cfg, const char *section,
			       const char *const *keys, size_t n, char *buf, size_t len)
{
	size_t best = 0;
	int best_rank = -1;

	for (size_t i = 0; i < n; i++) {
		size_t k = (size_t)(find_key(section, keys[i]) - conf_keys);
		int rank = cfg->key_override[k] ? 2 : cfg->key_line[k] ? 1 : 0;
		if (rank > best_rank) {
			best = i;
			best_rank = rank;
		}
	}
	return key_origin(cfg, section, keys[best], buf, len);
}

static int check_order(const struct nfsd_conf *cfg, const char *what, uint64_t stop,
		       uint64_t cull, uint64_t run, FILE *err)
{
	char keys[3][16], w[256];
	const char *const names[3] = { keys[0], keys[1], keys[2] };

	if (stop < cull && cull < run && run < 100)
		return 0;
	snprintf(keys[0], sizeof(keys[0]), "%sstop", what);
	snprintf(keys[1], sizeof(keys[1]), "%scull", what);
	snprintf(keys[2], sizeof(keys[2]), "%srun", what);
	fprintf(err, "%s: cache.%sstop < cache.%scull < cache.%srun < 100%% required, got %" PRIu64
		"%% / %" PRIu64 "%% / %" PRIu64 "%%\n",
		keys_origin(cfg, "cache", names, 3, w, sizeof(w)), what, what, what, stop, cull, run);
	return -1;
}

/* nfs://HOST/EXPORT[?version=3&nfsport=N&mountport=M]: the parts nfscached
 * uses, checked before libnfs sees them.  Returns NULL or what is wrong. */
static const char *url_problem(const char *url, char *why, size_t len)
{
	const char *host = url + 6, *path, *q;

	if (strncmp(url, "nfs://", 6) != 0)
		return "not an nfs:// URL";
	path = strchr(host, '/');
	q = strchr(host, '?');
	if (!path || (q && q < path))
		return "no export path (nfs://SERVER/EXPORT)";
	if (path == host)
		return "no server (nfs://SERVER/EXPORT)";
	for (q = q ? q + 1 : NULL; q && *q; q = strchr(q, '&') ? strchr(q, '&') + 1 : NULL) {
		size_t n = strcspn(q, "=&");
		char *end;
		if (q[n] != '=') {
			snprintf(why, len, "parameter \"%.*s\" without a value", (int)n, q);
			return why;
		}
		unsigned long v = strtoul(q + n + 1, &end, 10);
		int numeric = end != q + n + 1 && (*end == '\0' || *end == '&');
		if (n == 7 && strncmp(q, "version", 7) == 0) {
			if (!numeric || v != 3)
				return "version must be 3 (nfscached speaks NFSv3 to the upstream)";
		} else if ((n == 7 && strncmp(q, "nfsport", 7) == 0) ||
			   (n == 9 && strncmp(q, "mountport", 9) == 0)) {
			if (!numeric || v < 1 || v > 65535) {
				snprintf(why, len, "%.*s must be a port number 1..65535", (int)n, q);
				return why;
			}
		} else {
			snprintf(why, len, "unknown parameter \"%.*s\" (version, nfsport, mountport)",
				 (int)n, q);
			return why;
		}
	}
	return NULL;
}

/* The port `name` (nfsport, mountport) of an nfs:// URL url_problem()
 * accepted, or `def` when the URL does not give it. */
static unsigned long url_port(const char *url, const char *name, unsigned long def)
{
	size_t n = strlen(name);

	for (const char *q = strchr(url, '?'); q; q = strchr(q, '&')) {
		q++;
		if (strncmp(q, name, n) == 0 && q[n] == '=')
			return strtoul(q + n + 1, NULL, 10);
	}
	return def;
}

/* An address as its family and bytes (4 or 16 of them). */
struct host_addr {
	int family;                            /* AF_INET, AF_INET6, 0: none */
	unsigned char bytes[sizeof(struct in6_addr)];
};

static int host_addr_equal(const struct host_addr *a, const struct host_addr *b)
{
	return a->family == b->family &&
	       memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

static int host_addr_loopback(const struct host_addr *a)
{
	return (a->family == AF_INET && a->bytes[0] == 127) ||
	       (a->family == AF_INET6 && IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a->bytes));
}

static int host_addr_wildcard(const struct host_addr *a)
{
	static const unsigned char zero[sizeof(struct in6_addr)];

	return memcmp(a->bytes, zero, a->family == AF_INET ? 4 : 16) == 0;
}

/* Whether `a` is an address of one of this machine's interfaces. */
static int host_addr_local(const struct host_addr *a)
{
	struct ifaddrs *ifs, *i;
	int found = 0;

	if (getifaddrs(&ifs) != 0)
		return 0;
	for (i = ifs; i && !found; i = i->ifa_next) {
		struct host_addr b = { 0 };
		if (!i->ifa_addr || i->ifa_addr->sa_family != a->family)
			continue;
		b.family = a->family;
		if (a->family == AF_INET)
			memcpy(b.bytes, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		else
			memcpy(b.bytes, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		found = host_addr_equal(a, &b);
	}
	freeifaddrs(ifs);
	return found;
}

/* Whether a client of `host` (a numeric address or "localhost") reaches
 * a socket bound to `listen`. */
static int host_reaches(const char *host, const struct host_addr *listen)
{
	struct host_addr h = { 0 };

	if (strcasecmp(host, "localhost") == 0)
		return host_addr_wildcard(listen) || host_addr_loopback(listen);
	if (inet_pton(AF_INET, host, h.bytes) == 1)
		h.family = AF_INET;
	else if (inet_pton(AF_INET6, host, h.bytes) == 1)
		h.family = AF_INET6;
	else
		return 0;   /* a name: not resolved here */
	if (host_addr_wildcard(listen))
		return host_addr_loopback(&h) || host_addr_local(&h);
	return host_addr_equal(&h, listen);   /* 127.0.0.2 does not reach 127.0.0.1 */
}

/* Whether upstream.url (accepted by url_problem()) names nfscached's own
 * listen address: its server reaches the socket of server.listen
 * (host_reaches()) and its NFS port (2049 by default) or its MOUNT port
 * is the listen port.  Such a daemon would proxy to itself. */
static int url_is_self(const struct nfsd_conf *cfg)
{
	const char *host = cfg->upstream_url + 6;
	size_t n = strcspn(host, "/?");
	char name[INET6_ADDRSTRLEN + 2];
	struct host_addr listen = { 0 };
	int port;

	if (cfg->listen_addr.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&cfg->listen_addr;
		port = ntohs(sin->sin_port);
		listen.family = AF_INET;
		memcpy(listen.bytes, &sin->sin_addr, 4);
	} else if (cfg->listen_addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cfg->listen_addr;
		port = ntohs(sin6->sin6_port);
		listen.family = AF_INET6;
		memcpy(listen.bytes, &sin6->sin6_addr, 16);
	} else {
		return 0;
	}
	if (port == 0 || n >= sizeof(name))
		return 0;   /* an ephemeral port is never the upstream's */
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	memcpy(name, host, n);
	name[n] = '\0';
	if (!host_reaches(name, &listen))
		return 0;
	return url_port(cfg->upstream_url, "nfsport", 2049) == (unsigned long)port ||
	       url_port(cfg->upstream_url, "mountport", 0) == (unsigned long)port;
}

/* cache.dir and control.socket: nfscached runs from "/" once detached, and
 * an empty socket path would bind an anonymous socket. */
static int check_absolute(const struct nfsd_conf *cfg, const char *section, const char *key,
			  const char *value, FILE *err)
{
	char w[256];

	if (value[0] == '/')
		return 0;
	fprintf(err, "%s: %s.%s: must be an absolute path\n",
		key_origin(cfg, section, key, w, sizeof(w)), section, key);
	return -1;
}

/* Would listening on `a` and on `b` collide: one port (not 0, which picks
 * a free one), one family, the same address or either the wildcard? */
static int listen_overlap(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port && x->sin_port == y->sin_port &&
		       (x->sin_addr.s_addr == y->sin_addr.s_addr || x->sin_addr.s_addr == htonl(INADDR_ANY) ||
			y->sin_addr.s_addr == htonl(INADDR_ANY));
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port && x->sin6_port == y->sin6_port &&
		       (IN6_ARE_ADDR_EQUAL(&x->sin6_addr, &y->sin6_addr) ||
			IN6_IS_ADDR_UNSPECIFIED(&x->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&y->sin6_addr));
	}
	return 0;
}

int conf_finish(struct nfsd_conf *cfg, FILE *err)
{
	char bad[128], w[256], why[128];
	const char *problem;
	int rc = 0, listen_ok = 1;

	if (netaddr_parse_listen(cfg->server_listen, &cfg->listen_addr, &cfg->listen_addr_len) != 0) {
		listen_ok = 0;
		fprintf(err, "%s: server.listen: \"%s\" is not ADDRESS:PORT (a numeric address)\n",
			key_origin(cfg, "server", "listen", w, sizeof(w)), cfg->server_listen);
		rc = -1;
	}
	if (*cfg->metrics_listen &&
	    netaddr_parse_listen(cfg->metrics_listen, &cfg->metrics_addr, &cfg->metrics_addr_len) != 0) {
		fprintf(err, "%s: metrics.listen: \"%s\" is not ADDRESS:PORT (a numeric address)\n",
			key_origin(cfg, "metrics", "listen", w, sizeof(w)), cfg->metrics_listen);
		rc = -1;
	} else if (*cfg->metrics_listen && listen_ok &&
		   listen_overlap((struct sockaddr *)&cfg->metrics_addr, (struct sockaddr *)&cfg->listen_addr)) {
		fprintf(err, "%s: metrics.listen: \"%s\" is the port server.listen takes\n",
			key_origin(cfg, "metrics", "listen", w, sizeof(w)), cfg->metrics_listen);
		rc = -1;
	}
	netaddr_acl_free(&cfg->allow_acl);
	if (netaddr_acl_parse(cfg->server_allow, &cfg->allow_acl, bad, sizeof(bad)) != 0) {
		fprintf(err, "%s: server.allow: \"%s\" is not an address or network\n",
			key_origin(cfg, "server", "allow", w, sizeof(w)), bad);
		rc = -1;
	}
	if (!*cfg->upstream_url) {
		fprintf(err, "%s: upstream.url is required (nfs://SERVER/EXPORT?nfsport=N&mountport=M)\n",
			cfg->source);
		rc = -1;
	} else if ((problem = url_problem(cfg->upstream_url, why, sizeof(why)))) {
		fprintf(err, "%s: upstream.url: \"%s\": %s\n", key_origin(cfg, "upstream", "url", w, sizeof(w)),
			cfg->upstream_url, problem);
		rc = -1;
	} else if (listen_ok && url_is_self(cfg)) {
		fprintf(err, "%s: upstream.url: points at nfscached's own listen address (%s)\n",
			key_origin(cfg, "upstream", "url", w, sizeof(w)), cfg->server_listen);
		rc = -1;
	}
	for (const char *e = cfg->upstream_exports; *e; ) {
		e += strspn(e, " ,\t");
		size_t n = strcspn(e, " ,\t");
		if (n && *e != '/') {
			fprintf(err, "%s: upstream.exports: \"%.*s\" is not an absolute path\n",
				key_origin(cfg, "upstream", "exports", w, sizeof(w)), (int)n, e);
			rc = -1;
		}
		e += n;
	}
	if (check_absolute(cfg, "cache", "dir", cfg->cache.dir, err))
		rc = -1;
	if (check_absolute(cfg, "control", "socket", cfg->control_socket, err))
		rc = -1;
	else if (strlen(cfg->control_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(err, "%s: control.socket: path longer than %zu bytes\n",
			key_origin(cfg, "control", "socket", w, sizeof(w)),
			sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		rc = -1;
	}
	if (cfg->cache.page_size & (cfg->cache.page_size - 1)) {
		fprintf(err, "%s: cache.page_size: %" PRIu64 " is not a power of two\n",
			key_origin(cfg, "cache", "page_size", w, sizeof(w)), cfg->cache.page_size);
		rc = -1;
	}
	if (cfg->cache.acregmin > cfg->cache.acregmax)
		cfg->cache.acregmin = cfg->cache.acregmax;   /* as the kernel client clamps it */
	if (cfg->cache.acdirmin > cfg->cache.acdirmax)
		cfg->cache.acdirmin = cfg->cache.acdirmax;
	if (cfg->cache.readahead_max < cfg->cache.readahead)
		cfg->cache.readahead_max = cfg->cache.readahead;   /* the window never shrinks below its start */
	if (check_order(cfg, "b", cfg->cache.bstop, cfg->cache.bcull, cfg->cache.brun, err))
		rc = -1;
	if (check_order(cfg, "f", cfg->cache.fstop, cfg->cache.fcull, cfg->cache.frun, err))
		rc = -1;
	return rc;
}

void conf_print(const struct nfsd_conf *cfg, FILE *out)
{
	const char *section = "";

	fprintf(out, "# effective configuration (from %s)\n", cfg->source);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		const void *field = (const char *)cfg + k->offset;

		if (strcmp(section, k->section) != 0) {
			fprintf(out, "%s[%s]\n", i ? "\n" : "", k->section);
			section = k->section;
		}
		switch (k->type) {
		case T_STRING:
			fprintf(out, "%s = %s\n", k->key, *(char *const *)field);
			break;
		case T_BOOL:
			fprintf(out, "%s = %s\n", k->key, *(const int *)field ? "yes" : "no");
			break;
		case T_ENUM:
			fprintf(out, "%s = %s\n", k->key, k->names[*(const int *)field]);
			break;
		case T_PERCENT:
			fprintf(out, "%s = %" PRIu64 "%%\n", k->key, *(const uint64_t *)field);
			break;
		default:
			fprintf(out, "%s = %" PRIu64 "\n", k->key, *(const uint64_t *)field);
			break;
		}
	}
}

static int value_equal(const struct conf_key *k, const struct nfsd_conf *a,
		       const struct nfsd_conf *b)
{
	const void *fa = (const char *)a + k->offset, *fb = (const char *)b + k->offset;

	switch (k->type) {
	case T_STRING:
		return strcmp(*(char *const *)fa, *(char *const *)fb) == 0;
	case T_BOOL:
	case T_ENUM:
		return *(const int *)fa == *(const int *)fb;
	default:
		return *(const uint64_t *)fa == *(const uint64_t *)fb;
	}
}

void conf_reload(struct nfsd_conf *running, struct nfsd_conf *fresh, FILE *notes)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		if (value_equal(k, running, fresh))
			continue;
		if (k->restart) {
			fprintf(notes, "%s.%s changed: takes effect after a restart\n", k->section, k->key);
			continue;
		}
		fprintf(notes, "%s.%s changed\n", k->section, k->key);
		void *fr = (char *)running + k->offset, *ff = (char *)fresh + k->offset;
		if (k->type == T_STRING) {
			char *tmp = *(char **)fr;
			*(char **)fr = *(char **)ff;
			*(char **)ff = tmp;
		} else if (k->type == T_BOOL || k->type == T_ENUM) {
			*(int *)fr = *(int *)ff;
		} else {
			*(uint64_t *)fr = *(uint64_t *)ff;
		}
	}
	/* derived values of reloadable keys */
	struct netaddr_acl acl = running->allow_acl;
	running->allow_acl = fresh->allow_acl;
	fresh->allow_acl = acl;
}

void conf_free(struct nfsd_conf *cfg)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (conf_keys[i].type == T_STRING) {
			char **p = (char **)((char *)cfg + conf_keys[i].offset);
			free(*p);
			*p = NULL;
		}
	}
	netaddr_acl_free(&cfg->allow_acl);
}

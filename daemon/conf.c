/*
 * config.c — the configuration table, its parsers and the INI reader glue.
 * Owns struct nfsd_config's contents; knows nothing of the modules that use
 * the values.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/conf.h"
#include "daemon/log.h"

enum conf_type { T_STRING, T_BOOL, T_UINT, T_SIZE, T_MS, T_PERCENT, T_ENUM };

struct conf_key {
	const char *section;
	const char *key;
	enum conf_type type;
	size_t offset;            /* into struct nfsd_config */
	uint64_t min, max;        /* numeric types */
	const char *def;          /* default, in file syntax */
	const char *const *names; /* T_ENUM: names, index = value; NULL-terminated */
};

static const char *const squash_names[] = { "none", "root", "all", NULL };
static const char *const write_mode_names[] = { "writeback", "writethrough", NULL };
static const char *const log_names[] = { "error", "warning", "info", "debug", NULL };

#define OFF(f) offsetof(struct nfsd_config, f)
#define GiB (1024ull * 1024 * 1024)

static const struct conf_key conf_keys[] = {
	{ "server", "listen", T_STRING, OFF(server_listen), 0, 0, "127.0.0.1:2049", NULL },
	{ "server", "allow", T_STRING, OFF(server_allow), 0, 0, "127.0.0.0/8 ::1", NULL },
	{ "server", "secure", T_BOOL, OFF(server_secure), 0, 1, "yes", NULL },
	{ "server", "squash", T_ENUM, OFF(server_squash), 0, 0, "none", squash_names },
	{ "server", "rpcbind", T_BOOL, OFF(server_rpcbind), 0, 1, "no", NULL },
	{ "server", "max_record", T_SIZE, OFF(server_max_record), 64 * 1024, 64 * 1024 * 1024, "1088k", NULL },
	{ "upstream", "url", T_STRING, OFF(upstream_url), 0, 0, "", NULL },
	{ "upstream", "exports", T_STRING, OFF(upstream_exports), 0, 0, "", NULL },
	{ "upstream", "timeout_ms", T_MS, OFF(upstream_timeout_ms), 100, 24ull * 3600 * 1000, "30000", NULL },
	{ "cache", "dir", T_STRING, OFF(cache_dir), 0, 0, LOCALSTATEDIR "/cache/nfscached", NULL },
	{ "cache", "page_size", T_SIZE, OFF(cache_page_size), 512, 1024 * 1024, "4096", NULL },
	{ "cache", "partial_pages", T_BOOL, OFF(cache_partial_pages), 0, 1, "yes", NULL },
	{ "cache", "write_mode", T_ENUM, OFF(cache_write_mode), 0, 0, "writeback", write_mode_names },
	{ "cache", "dirty_expire_ms", T_MS, OFF(cache_dirty_expire_ms), 0, 24ull * 3600 * 1000, "5000", NULL },
	{ "cache", "max_dirty", T_SIZE, OFF(cache_max_dirty), 0, 1024 * GiB, "256M", NULL },
	{ "cache", "readahead", T_SIZE, OFF(cache_readahead), 0, 1 * GiB, "1M", NULL },
	{ "cache", "acregmin", T_UINT, OFF(cache_acregmin), 0, 3600, "3", NULL },
	{ "cache", "acregmax", T_UINT, OFF(cache_acregmax), 0, 3600, "60", NULL },
	{ "cache", "max_size", T_SIZE, OFF(cache_max_size), 0, UINT64_MAX, "0", NULL },
	{ "cache", "brun", T_PERCENT, OFF(cache_brun), 0, 99, "10%", NULL },
	{ "cache", "bcull", T_PERCENT, OFF(cache_bcull), 0, 99, "7%", NULL },
	{ "cache", "bstop", T_PERCENT, OFF(cache_bstop), 0, 99, "3%", NULL },
	{ "cache", "frun", T_PERCENT, OFF(cache_frun), 0, 99, "10%", NULL },
	{ "cache", "fcull", T_PERCENT, OFF(cache_fcull), 0, 99, "7%", NULL },
	{ "cache", "fstop", T_PERCENT, OFF(cache_fstop), 0, 99, "3%", NULL },
	{ "control", "socket", T_STRING, OFF(control_socket), 0, 0, "/run/nfscached/ctl.sock", NULL },
	{ "log", "level", T_ENUM, OFF(log_level), 0, 0, "info", log_names },
};
#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

int config_parse_size(const char *s, uint64_t *bytes)
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
static int set_value(struct nfsd_config *cfg, const struct conf_key *k, const char *value,
		     char *msg, size_t msglen)
{
	void *field = (char *)cfg + k->offset;
	uint64_t v = 0;
	int rc;

	switch (k->type) {
	case T_STRING:
		free(*(char **)field);
		*(char **)field = strdup(value);
		if (!*(char **)field)
			abort();
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
		rc = config_parse_size(value, &v);
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

void config_defaults(struct nfsd_config *cfg)
{
	char msg[256];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_KEYS; i++)
		if (set_value(cfg, &conf_keys[i], conf_keys[i].def, msg, sizeof(msg)) != 0)
			abort();   /* a default that fails its own table is a programmer error */
	cfg->source = "(defaults)";
}

struct load_ctx {
	struct nfsd_config *cfg;
	char msg[320];          /* first error */
	int failed;
	int duplicate;          /* the first error is a key seen again */
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
		/* libinih also reports an indented continuation line as the same
		 * key again; config_load_file() tells the two apart */
		snprintf(ctx->msg, sizeof(ctx->msg), "%s.%s given twice", section, name);
		ctx->failed = 1;
		ctx->duplicate = 1;
		return 0;
	}
	ctx->seen[idx] = 1;
	if (strstr(value, " #") || strstr(value, "\t#")) {
		snprintf(ctx->msg, sizeof(ctx->msg),
			 "%s.%s: comment after a value (put comments on their own line)", section, name);
		ctx->failed = 1;
		return 0;
	}
	if (set_value(ctx->cfg, k, value, ctx->msg, sizeof(ctx->msg)) != 0) {
		ctx->failed = 1;
		return 0;
	}
	return 1;
}

/* Does line `n` (1-based) of `f` start with white space? */
static int line_is_indented(FILE *f, int n)
{
	char buf[512];
	int line = 0, at_start = 1;

	rewind(f);
	while (fgets(buf, sizeof(buf), f)) {
		if (at_start && ++line == n)
			return buf[0] == ' ' || buf[0] == '\t';
		at_start = strchr(buf, '\n') != NULL;
	}
	return 0;
}

int config_load_file(struct nfsd_config *cfg, const char *path, int missing_ok, FILE *err)
{
	struct load_ctx ctx = { .cfg = cfg };
	FILE *f = fopen(path, "r");

	if (!f) {
		if (missing_ok && errno == ENOENT)
			return 0;
		fprintf(err, "%s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	int line = ini_parse_file(f, ini_handler_cb, &ctx);
	if (line > 0 && ctx.duplicate && line_is_indented(f, line))
		strncat(ctx.msg, " (an indented line continues the previous value: "
			"write one key per line, unindented)", sizeof(ctx.msg) - strlen(ctx.msg) - 1);
	fclose(f);
	if (line < 0) {
		fprintf(err, "%s: cannot read\n", path);
		return -1;
	}
	if (line > 0) {
		if (!ctx.failed)
			snprintf(ctx.msg, sizeof(ctx.msg), "syntax error (expected \"[section]\" or \"key = value\")");
		fprintf(err, "%s:%d: %s\n", path, line, ctx.msg);
		return -1;
	}
	cfg->source = path;
	return 0;
}

int config_apply_override(struct nfsd_config *cfg, const char *assignment, FILE *err)
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
	return 0;
}

static int check_order(const char *what, uint64_t stop, uint64_t cull, uint64_t run, FILE *err,
		       const char *src)
{
	if (stop < cull && cull < run && run < 100)
		return 0;
	fprintf(err, "%s: cache.%sstop < cache.%scull < cache.%srun < 100%% required, got %" PRIu64
		"%% / %" PRIu64 "%% / %" PRIu64 "%%\n", src, what, what, what, stop, cull, run);
	return -1;
}

int config_finish(struct nfsd_config *cfg, FILE *err)
{
	char bad[128];
	int rc = 0;

	if (netaddr_parse_listen(cfg->server_listen, &cfg->listen_addr, &cfg->listen_addr_len) != 0) {
		fprintf(err, "%s: server.listen: \"%s\" is not ADDRESS:PORT\n", cfg->source, cfg->server_listen);
		rc = -1;
	}
	netaddr_acl_free(&cfg->allow_acl);
	if (netaddr_acl_parse(cfg->server_allow, &cfg->allow_acl, bad, sizeof(bad)) != 0) {
		fprintf(err, "%s: server.allow: \"%s\" is not an address or network\n", cfg->source, bad);
		rc = -1;
	}
	if (!*cfg->upstream_url) {
		fprintf(err, "%s: upstream.url is required (nfs://SERVER/EXPORT?nfsport=N&mountport=M)\n",
			cfg->source);
		rc = -1;
	} else if (strncmp(cfg->upstream_url, "nfs://", 6) != 0) {
		fprintf(err, "%s: upstream.url: \"%s\" is not an nfs:// URL\n", cfg->source, cfg->upstream_url);
		rc = -1;
	}
	if (cfg->cache_page_size & (cfg->cache_page_size - 1)) {
		fprintf(err, "%s: cache.page_size: %" PRIu64 " is not a power of two\n", cfg->source,
			cfg->cache_page_size);
		rc = -1;
	}
	if (cfg->cache_acregmin > cfg->cache_acregmax) {
		fprintf(err, "%s: cache.acregmin (%" PRIu64 ") is larger than cache.acregmax (%" PRIu64 ")\n",
			cfg->source, cfg->cache_acregmin, cfg->cache_acregmax);
		rc = -1;
	}
	if (check_order("b", cfg->cache_bstop, cfg->cache_bcull, cfg->cache_brun, err, cfg->source))
		rc = -1;
	if (check_order("f", cfg->cache_fstop, cfg->cache_fcull, cfg->cache_frun, err, cfg->source))
		rc = -1;
	return rc;
}

void config_print(const struct nfsd_config *cfg, FILE *out)
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

void config_free(struct nfsd_config *cfg)
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

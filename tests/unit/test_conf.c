/*
 * test_conf.c — the configuration table: defaults, sizes, ranges, INI
 * errors reported as FILE:LINE, overrides, and cross-key checks.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/conf.c"
#include "tests/unit/tap.h"

static char tmpl[] = "/tmp/test_conf.XXXXXX";

/* server.listen and server.allow, through netaddr.c: what a listen
 * address parses to, what a bad one is refused for, which peers an allow
 * list lets in. */
static void test_netaddr(void)
{
	struct sockaddr_storage ss;
	struct netaddr_acl acl;
	socklen_t len = 0;
	char buf[64], bad[32];

	ok(netaddr_parse_listen("127.0.0.1:2049", &ss, &len) == 0 && len == sizeof(struct sockaddr_in) &&
	   strcmp(netaddr_format((struct sockaddr *)&ss, buf, sizeof(buf)), "127.0.0.1:2049") == 0,
	   "listen 127.0.0.1:2049");
	ok(netaddr_parse_listen("[::1]:0", &ss, &len) == 0 && len == sizeof(struct sockaddr_in6) &&
	   strcmp(netaddr_format((struct sockaddr *)&ss, buf, sizeof(buf)), "[::1]:0") == 0,
	   "listen [::1]:0");
	ok(netaddr_parse_listen("127.0.0.1:65536", &ss, &len) == -EINVAL &&
	   netaddr_parse_listen("127.0.0.1", &ss, &len) == -EINVAL &&
	   netaddr_parse_listen("[::1]2049", &ss, &len) == -EINVAL &&
	   netaddr_parse_listen("[1.2.3.4]:1", &ss, &len) == -EINVAL &&
	   netaddr_parse_listen("::1:1", &ss, &len) == -EINVAL,
	   "listen: bad port, no port, no colon after ], v4 in brackets, v6 without");
	ok(netaddr_acl_parse("10.0.0.0/8, ::1 192.168.1.7", &acl, bad, sizeof(bad)) == 0 &&
	   acl.nets.n == 3, "allow: three networks");
	netaddr_parse_listen("10.200.3.4:1", &ss, &len);
	int in10 = netaddr_acl_match(&acl, (struct sockaddr *)&ss);
	netaddr_parse_listen("192.168.1.8:1", &ss, &len);
	int host8 = netaddr_acl_match(&acl, (struct sockaddr *)&ss);
	netaddr_parse_listen("[::1]:1", &ss, &len);
	ok(in10 && !host8 && netaddr_acl_match(&acl, (struct sockaddr *)&ss),
	   "allow: 10.200.3.4 and ::1 match, 192.168.1.8 does not");
	netaddr_acl_free(&acl);
	ok(netaddr_acl_parse("10.0.0.0/33", &acl, bad, sizeof(bad)) == -EINVAL &&
	   strcmp(bad, "10.0.0.0/33") == 0 && acl.nets.n == 0, "allow: /33 refused, named, list empty");
}

/* Write `text` to a temporary file and load it over the defaults; returns
 * load's result and leaves its error output in *err (malloc'd). */
static int load_text(struct nfsd_conf *cfg, const char *text, char **err)
{
	char path[64];
	size_t len;
	FILE *ef = open_memstream(err, &len);

	snprintf(path, sizeof(path), "%s", tmpl);
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	conf_defaults(cfg);
	int rc = conf_load_file(cfg, path, 0, ef);
	fclose(ef);
	/* replace the random name by "F" so messages compare exactly */
	char *p = strstr(*err, path);
	if (p) {
		memmove(p + 1, p + strlen(path), strlen(p + strlen(path)) + 1);
		*p = 'F';
	}
	unlink(path);
	cfg->source = "F";   /* later messages name the file as "F" too */
	return rc;
}

static void expect_error(const char *text, const char *want, const char *what)
{
	struct nfsd_conf cfg;
	char *err = NULL;
	int rc = load_text(&cfg, text, &err);

	ok(rc == -1 && strstr(err, want) != NULL, "%s: got \"%s\"", what, err);
	free(err);
	conf_free(&cfg);
}

int main(void)
{
	struct nfsd_conf cfg;
	uint64_t v = 0;
	char *err = NULL;
	size_t errlen;
	FILE *ef;

	plan(54);
	test_netaddr();

	/* sizes */
	ok(conf_parse_size("1088k", &v) == 0 && v == 1114112, "1088k = 1114112 bytes");
	ok(conf_parse_size("256M", &v) == 0 && v == 256ull << 20, "256M");
	ok(conf_parse_size("2G", &v) == 0 && v == 2ull << 30, "2G");
	ok(conf_parse_size("4096", &v) == 0 && v == 4096, "plain bytes");
	ok(conf_parse_size("12x", &v) != 0, "unknown suffix rejected");
	ok(conf_parse_size("-1", &v) != 0, "negative rejected");
	ok(conf_parse_size("99999999999999999999G", &v) != 0, "overflow rejected");

	/* defaults are the documented ones */
	conf_defaults(&cfg);
	ok(cfg.server_max_record == 1114112 && cfg.server_secure == 1 &&
	   cfg.cache.page_size == 4096 && cfg.upstream_timeout_ms == 30000 &&
	   cfg.cache.brun == 10 && cfg.cache.write_mode == WRITE_MODE_WRITEBACK,
	   "defaults match nfscached.conf");
	ef = open_memstream(&err, &errlen);
	ok(conf_finish(&cfg, ef) == -1, "no upstream.url: conf_finish fails");
	fclose(ef);
	ok(strstr(err, "upstream.url is required") != NULL, "and says why: %s", err);
	free(err);
	conf_free(&cfg);

	/* a good file */
	ok(load_text(&cfg, "[server]\nlisten = 127.0.0.1:0\nsecure = no\n\n# comment\n[cache]\n"
			   "readahead = 2M\nbrun = 20%\n[upstream]\nurl = nfs://h/e?nfsport=1\n",
		     &err) == 0, "valid file loads");
	free(err);
	ef = open_memstream(&err, &errlen);
	ok(conf_finish(&cfg, ef) == 0 && cfg.cache.readahead == 2u << 20 && cfg.cache.brun == 20 &&
	   cfg.server_secure == 0, "values taken (readahead 2M, brun 20%%, secure no)");
	fclose(ef);
	free(err);
	conf_free(&cfg);

	/* errors carry FILE:LINE */
	expect_error("[server]\nlisten = 1.2.3.4:5\nbogus = 1\n", "F:3: unknown key \"bogus\" in [server]",
		     "unknown key");
	expect_error("[nosuch]\na = b\n", "F:2: unknown section [nosuch]", "unknown section");
	expect_error("[cache]\n\npage_size = 12q\n", "F:3: cache.page_size: expected a size",
		     "bad size");
	expect_error("[cache]\npage_size = 64\n", "F:2: cache.page_size: 64 is out of range 512..1048576",
		     "size out of range");
	expect_error("[server]\nsecure = maybe\n", "F:2: server.secure: expected yes or no", "bad bool");
	expect_error("[server]\nsquash = some\n", "F:2: server.squash: expected none | root | all",
		     "bad enum");
	expect_error("[cache]\nbrun = 1O%\n", "F:2: cache.brun: expected a percentage", "not a percentage");
	expect_error("[server]\nallow = 127.0.0.0/8\n  10.0.0.0/8\n",
		     "F:3: indented line (it would continue the previous value)",
		     "indented continuation line");
	expect_error("[log]\nlevel = info\n[log]\nlevel = debug\n", "F:4: log.level given twice\n",
		     "a key given twice");
	expect_error("[log]\nlevel = info # chatty\n", "F:2: comment after a value",
		     "inline # comment");
	expect_error("[server]\nallow = 10.0.0.0/8 ; 192.168.0.0/16\n", "F:2: comment after a value",
		     "inline ; comment (libinih would drop the rest of the value)");
	expect_error("[server\nlisten = 1.2.3.4:5\n", "F:1: section header without \"]\"",
		     "broken section header");
	{
		char text[400];
		snprintf(text, sizeof(text), "[server]\n# c\nallow = %0199d\n", 1);
		expect_error(text, "F:3: line longer than 198 characters", "a line libinih would split");
	}

	/* overrides and cross-key checks */
	conf_defaults(&cfg);
	ef = open_memstream(&err, &errlen);
	ok(conf_apply_override(&cfg, "cache.max_dirty=1G", ef) == 0 && cfg.cache.max_dirty == 1ull << 30,
	   "-o cache.max_dirty=1G");
	ok(conf_apply_override(&cfg, "cache.nope=1", ef) == -1, "-o unknown key fails");
	ok(conf_apply_override(&cfg, "noequals", ef) == -1, "-o without = fails");
	conf_apply_override(&cfg, "upstream.url=nfs://h/e", ef);
	conf_apply_override(&cfg, "cache.bcull=12%", ef);
	ok(conf_finish(&cfg, ef) == -1, "bcull above brun fails");
	fclose(ef);
	ok(strstr(err, "-o cache.nope=1: unknown key cache.nope") != NULL &&
	   strstr(err, "cache.bstop < cache.bcull < cache.brun") != NULL,
	   "messages name the override and the ordering: %s", err);
	free(err);
	conf_free(&cfg);

	/* values found wrong after parsing name their line, or their -o */
	static const struct { const char *text, *o, *want, *what; } late[] = {
		{ "[upstream]\nurl = nfs://h/e\n[server]\n\nlisten = localhost:2049\n", NULL,
		  "F:5: server.listen: \"localhost:2049\" is not ADDRESS:PORT", "listen: FILE:LINE" },
		{ "[upstream]\nurl = nfs://h/e\n", "server.listen=nohost:1",
		  "-o server.listen=nohost:1: server.listen:", "listen from -o names the -o" },
		{ "[upstream]\nurl = nfs:///e?nfsport=1\n", NULL, "F:2: upstream.url: \"nfs:///e?nfsport=1\": no server",
		  "url without a server" },
		{ "[upstream]\nurl = nfs://h/e?version=4\n", NULL, "version must be 3", "url version=4" },
		{ "[upstream]\nurl = nfs://h/e?nfsport=99999\n", NULL, "nfsport must be a port number",
		  "url port out of range" },
		{ "[upstream]\nurl = nfs://h/e?bogus=1\n", NULL, "unknown parameter \"bogus\"", "url parameter" },
		{ "[upstream]\nurl = nfs://h/e\nexports = /ok relative\n", NULL,
		  "F:3: upstream.exports: \"relative\" is not an absolute path", "relative export" },
		{ "[upstream]\nurl = nfs://h/e\n[cache]\ndir = cache\n", NULL,
		  "F:4: cache.dir: must be an absolute path", "relative cache.dir" },
		{ "[upstream]\nurl = nfs://h/e\n", "control.socket=",
		  "-o control.socket=: control.socket: must be an absolute path", "empty control.socket" },
		{ "[upstream]\nurl = nfs://h/e\n[cache]\nbcull = 7%\n", "cache.bstop=20%",
		  "-o cache.bstop=20%: cache.bstop < cache.bcull", "order: the -o of the key set by -o" },
		{ "[upstream]\nurl = nfs://h/e\n[cache]\nbrun = 5%\n", NULL,
		  "F:4: cache.bstop < cache.bcull", "order: the line of the key set in the file" },
		{ "[server]\nlisten = 127.0.0.1:2049\n[upstream]\n"
		  "url = nfs://127.0.0.1/export?nfsport=2049&mountport=2049\n", NULL,
		  "F:4: upstream.url: points at nfscached's own listen address", "url: own NFS port" },
		{ "[server]\nlisten = [::1]:3049\n[upstream]\nurl = nfs://localhost/e?nfsport=1&mountport=3049\n",
		  NULL, "F:4: upstream.url: points at nfscached's own listen address", "url: own MOUNT port" },
		{ "[server]\nlisten = 0.0.0.0:2049\n[upstream]\nurl = nfs://localhost/e\n", NULL,
		  "F:4: upstream.url: points at nfscached's own listen address", "url: localhost, every address" },
	};
	for (size_t i = 0; i < sizeof(late) / sizeof(late[0]); i++) {
		int rc = load_text(&cfg, late[i].text, &err);
		free(err);
		ef = open_memstream(&err, &errlen);
		if (late[i].o)
			conf_apply_override(&cfg, late[i].o, ef);
		rc |= conf_finish(&cfg, ef);
		fclose(ef);
		ok(rc != 0 && strstr(err, late[i].want) != NULL, "%s: got \"%s\"", late[i].what, err);
		free(err);
		conf_free(&cfg);
	}

	/* upstreams nfscached's own socket does not receive */
	static const struct { const char *text, *what; } other[] = {
		{ "[server]\nlisten = 127.0.0.1:2049\n[upstream]\n"
		  "url = nfs://127.0.0.1/e?nfsport=2050&mountport=2051\n", "loopback on other ports" },
		{ "[server]\nlisten = 192.0.2.1:2049\n[upstream]\nurl = nfs://127.0.0.1/e\n",
		  "loopback when listening on another address" },
		{ "[server]\nlisten = 0.0.0.0:2049\n[upstream]\nurl = nfs://192.0.2.7/e\n",
		  "another machine when listening on every address" },
		{ "[server]\nlisten = 127.0.0.1:2049\n[upstream]\nurl = nfs://127.0.0.2/e\n",
		  "another loopback address (its socket is not 127.0.0.1's)" },
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		load_text(&cfg, other[i].text, &err);
		free(err);
		ef = open_memstream(&err, &errlen);
		int rc = conf_finish(&cfg, ef);
		fclose(ef);
		ok(rc == 0, "url: %s is accepted: %s", other[i].what, err);
		free(err);
		conf_free(&cfg);
	}
	return done();
}

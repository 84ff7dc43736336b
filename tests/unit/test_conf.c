/*
 * tests/unit/test_conf.c - the configuration parser (conf/conf.c and the
 * files it is split into: conf_val.c, conf_daemon.c, conf_pools.c,
 * conf_access.c, conf_targets.c; the whole parser is one unit to test,
 * through conf_load) and conf/log.c: size/name/address parsers, every example file, and good and bad configurations written to a
 * temporary directory, checking both the result and the "FILE:LINE: message"
 * lines.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_int.h"
#include "tests/lib/ckmain.h"

static char tmpdir[64];
static char cfgpath[128];
static char *errbuf;   /* what conf_load printed, from the last load() */
static size_t errlen;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-test-conf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(cfgpath, sizeof(cfgpath), "%s/t.conf", tmpdir);
	errbuf = NULL;
}

static void teardown(void)
{
	char p[160];

	unlink(cfgpath);
	snprintf(p, sizeof(p), "%s/log.txt", tmpdir);
	unlink(p);
	rmdir(tmpdir);
	free(errbuf);
	errbuf = NULL;
}

/* Writes @text to the temp config and loads it; errors land in errbuf. */
static int load(const char *text, struct conf **out)
{
	FILE *f = fopen(cfgpath, "w");
	FILE *errs;
	int ret;

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(errbuf);
	errbuf = NULL;
	errs = open_memstream(&errbuf, &errlen);
	ck_assert_ptr_nonnull(errs);
	ret = conf_load(cfgpath, out, errs);
	fclose(errs);
	return ret;
}

/* errbuf holds a line "<cfgpath>:<line>: ...<needle>..." */
static bool has_err(int line, const char *needle)
{
	char prefix[200];
	const char *p = errbuf;

	snprintf(prefix, sizeof(prefix), "%s:%d: ", cfgpath, line);
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char lbuf[1024];

		if (len >= sizeof(lbuf))
			len = sizeof(lbuf) - 1;
		memcpy(lbuf, p, len);
		lbuf[len] = '\0';
		if (strncmp(lbuf, prefix, strlen(prefix)) == 0 && strstr(lbuf, needle))
			return true;
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

static unsigned err_lines(void)
{
	unsigned n = 0;

	for (const char *p = errbuf; p && *p; p++)
		n += *p == '\n';
	return n;
}

#define ASSERT_ERR(line, needle)                                                  \
	ck_assert_msg(has_err(line, needle), "expected line %d: '%s' in:\n%s", line, \
		      needle, errbuf ? errbuf : "(nothing)")

/* A valid configuration built from sections; NULL takes the default. */
static const char *DEF_POOLS =
	"pools = ( { name = \"tank\"; level = \"raid5\"; members = (\"d0\", \"d1\", \"d2\"); } );\n";
static const char *DEF_PORTALS =
	"portals = ( { name = \"p1\"; listen = \"127.0.0.1:3260\"; } );\n";
static const char *DEF_TARGETS =
	"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
	"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); } );\n";

static int load_parts(const char *daemon, const char *pools, const char *portals,
		      const char *targets, struct conf **out)
{
	char text[8192];

	snprintf(text, sizeof(text), "%s%s%s%s", daemon ? daemon : "", pools ? pools : DEF_POOLS,
		 portals ? portals : DEF_PORTALS, targets ? targets : DEF_TARGETS);
	return load(text, out);
}

/* Loads a config expected to be rejected with a message containing @needle. */
static void expect_bad(const char *daemon, const char *pools, const char *portals,
		       const char *targets, const char *needle)
{
	struct conf *c = NULL;
	int ret = load_parts(daemon, pools, portals, targets, &c);

	ck_assert_msg(ret == -EINVAL, "expected -EINVAL for '%s', got %d", needle, ret);
	ck_assert_ptr_null(c);
	ck_assert_msg(errbuf && strstr(errbuf, needle), "expected '%s' in:\n%s", needle,
		      errbuf ? errbuf : "(nothing)");
}

static struct conf *expect_good(const char *daemon, const char *pools, const char *portals,
				const char *targets)
{
	struct conf *c = NULL;
	int ret = load_parts(daemon, pools, portals, targets, &c);

	ck_assert_msg(ret == 0, "expected success, got %d:\n%s", ret, errbuf ? errbuf : "");
	ck_assert_ptr_nonnull(c);
	return c;
}

START_TEST(t01_parse_sizes)
{
	struct conf_size s;

	ck_assert_int_eq(conf_parse_size("512", false, &s), 0);
	ck_assert_uint_eq(s.bytes, 512);
	ck_assert_uint_eq(s.percent, 0);
	ck_assert_int_eq(conf_parse_size("64K", false, &s), 0);
	ck_assert_uint_eq(s.bytes, 65536);
	ck_assert_int_eq(conf_parse_size("3m", false, &s), 0);
	ck_assert_uint_eq(s.bytes, 3ULL << 20);
	ck_assert_int_eq(conf_parse_size("1G", false, &s), 0);
	ck_assert_uint_eq(s.bytes, 1ULL << 30);
	ck_assert_int_eq(conf_parse_size("2T", false, &s), 0);
	ck_assert_uint_eq(s.bytes, 2ULL << 40);
	ck_assert_int_eq(conf_parse_size("80%", true, &s), 0);
	ck_assert_uint_eq(s.bytes, 0);
	ck_assert_uint_eq(s.percent, 80);
	ck_assert_int_eq(conf_parse_size("100%", true, &s), 0);
	ck_assert_uint_eq(s.percent, 100);

	ck_assert_int_eq(conf_parse_size("80%", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("0%", true, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("101%", true, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("0", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("G", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("1.5G", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("1GB", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("1X", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("-1", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size(" 1", false, &s), -EINVAL);
	ck_assert_int_eq(conf_parse_size("16777216T", false, &s), -ERANGE);
	ck_assert_int_eq(conf_parse_size("99999999999999999999999", false, &s), -ERANGE);
}
END_TEST

START_TEST(t02_iscsi_names)
{
	static const char *const good[] = {
		"iqn.2026-11.org.rtgt:quickstart", "iqn.1993-08.org.debian:01:abcdef",
		"iqn.1991-05.com.microsoft:host-1.example.com", "iqn.2001-04.com.example",
		"eui.02004567a425678d", "naa.52004567ba64678d",
		"naa.62004567ba64678d0123456789abcdef",
	};
	static const char *const bad[] = {
		"", "iqn.", "iqn.2026-11", "iqn.2026-11.", "iqn.2026-13.org.x", "iqn.2026-00.org.x",
		"iqn.26-11.org.x", "iqn.2026-11.Org.x", "IQN.2026-11.org.x", "iqn.2026-11.org.x:",
		"iqn.2026-11.org..x", "iqn.2026-11.org.x:a b", "iqn.2026-11.org.x:a_b",
		"eui.02004567A425678D", "eui.1234", "naa.1234", "naa.52004567ba64678d00",
		"foo.2026-11.org.x", "iqn.2026-11.org_x",
	};
	char longname[300];
	const char *why;

	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(conf_iqn_check(good[i], &why) == 0, "%s rejected: %s", good[i], why);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(conf_iqn_check(bad[i], &why) == -EINVAL, "%s accepted", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "iqn.2026-11.org.x:", 18);
	longname[224] = '\0';
	ck_assert_int_eq(conf_iqn_check(longname, &why), -EINVAL);
	longname[223] = '\0';
	ck_assert_int_eq(conf_iqn_check(longname, &why), 0);

	ck_assert_int_eq(conf_volume_name_check("vol0"), 0);
	ck_assert_int_eq(conf_volume_name_check("A.b_c-9"), 0);
	ck_assert_int_eq(conf_volume_name_check(""), -EINVAL);
	ck_assert_int_eq(conf_volume_name_check("a/b"), -EINVAL);
	ck_assert_int_eq(conf_volume_name_check("a b"), -EINVAL);
	memset(longname, 'v', 64);
	longname[64] = '\0';
	ck_assert_int_eq(conf_volume_name_check(longname), -EINVAL);
	longname[63] = '\0';
	ck_assert_int_eq(conf_volume_name_check(longname), 0);
}
END_TEST

START_TEST(t03_listen_addresses)
{
	char host[64];
	uint16_t port;
	int fam;
	const char *why;

	ck_assert_int_eq(conf_listen_parse("127.0.0.1:3260", host, &port, &fam, &why), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_uint_eq(port, 3260);
	ck_assert_int_eq(fam, AF_INET);
	ck_assert_int_eq(conf_listen_parse("[::1]:65535", host, &port, &fam, &why), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_uint_eq(port, 65535);
	ck_assert_int_eq(fam, AF_INET6);
	ck_assert_int_eq(conf_listen_parse("[fe80::1:2]:1", host, &port, &fam, &why), 0);
	ck_assert_uint_eq(port, 1);

	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:99999999",
		"127.0.0.1:32a", "localhost:3260", "::1:3260", "[::1]3260", "[::1]:", "[]:3260",
		":3260", "1.2.3:3260", "[127.0.0.1]:3260", "300.0.0.1:3260",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(conf_listen_parse(bad[i], host, &port, &fam, &why) == -EINVAL,
			      "%s accepted", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
}
END_TEST

START_TEST(t04_path_resolve)
{
	static const char *const cases[][3] = {
		{ "/etc/rtgt", "var/d0.img", "/etc/rtgt/var/d0.img" },
		{ "/etc/rtgt", "/dev/sdb", "/dev/sdb" },
		{ "/a/b/conf/examples", "../../var/x.img", "/a/b/var/x.img" },
		{ "/a", "./x//y/./z", "/a/x/y/z" },
		{ "/a", "../../../x", "/x" },
		{ "/", "x", "/x" },
		{ "rel", "../../x", "../x" },
		{ "rel", "x/..", "rel" },
		{ "/a", "x/../..", "/" },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *r = conf_path_resolve(cases[i][0], cases[i][1]);

		ck_assert_ptr_nonnull(r);
		ck_assert_msg(strcmp(r, cases[i][2]) == 0, "%s + %s = %s, want %s", cases[i][0],
			      cases[i][1], r, cases[i][2]);
		free(r);
	}
}
END_TEST

START_TEST(t05_examples_load)
{
	static const char *const files[] = {
		"conf/examples/quickstart.conf", "conf/examples/two-raid1.conf",
		"conf/examples/raid5-two-targets.conf", "conf/examples/full.conf",
	};
	char cwd[PATH_MAX], want[PATH_MAX + 64];
	struct conf *c;

	for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FILE *errs = open_memstream(&errbuf, &errlen);
		int ret = conf_load(files[i], &c, errs);

		fclose(errs);
		ck_assert_msg(ret == 0, "%s: %d\n%s", files[i], ret, errbuf);
		/* the examples carry no warnings either */
		ck_assert_msg(errlen == 0, "%s printed:\n%s", files[i], errbuf);
		free(errbuf);
		errbuf = NULL;
		if (i == 0) {
			const struct conf_target *t;
			const struct conf_pool *p;

			ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
			ck_assert_uint_eq(c->daemon.workers, 2);
			snprintf(want, sizeof(want), "%s/var/rtgtd.sock", cwd);
			ck_assert_str_eq(c->daemon.control, want);
			p = conf_pool_find(c, "quickstart");
			ck_assert_ptr_nonnull(p);
			ck_assert_int_eq(p->level, CONF_RAID5);
			ck_assert_uint_eq(p->n_members, 4);
			ck_assert_uint_eq(p->create_size, 1ULL << 30);
			ck_assert_uint_eq(p->chunk, 64 << 10);
			snprintf(want, sizeof(want), "%s/var/quickstart-d3.img", cwd);
			ck_assert_str_eq(p->member_paths[3], want);
			ck_assert_str_eq(p->members[3], "../../var/quickstart-d3.img");
			ck_assert_uint_eq(c->n_portals, 1);
			ck_assert_str_eq(c->portals[0].host, "127.0.0.1");
			ck_assert_uint_eq(c->portals[0].port, 3260);
			ck_assert_uint_eq(c->portals[0].tpgt, 1);
			t = conf_target_find(c, "iqn.2026-11.org.rtgt:quickstart");
			ck_assert_ptr_nonnull(t);
			ck_assert_uint_eq(t->n_luns, 1);
			ck_assert_uint_eq(t->luns[0].lun, 0);
			ck_assert_uint_eq(t->luns[0].size.percent, 80);
			ck_assert(t->allow_all);
		}
		if (i == 1) {
			ck_assert_uint_eq(c->n_pools, 2);
			ck_assert_int_eq(c->pools[1].level, CONF_RAID1);
			ck_assert_uint_eq(c->n_portals, 2);
			ck_assert_uint_eq(c->portals[1].tpgt, 2);
			ck_assert_uint_eq(c->targets[1].portals[0], 1);
		}
		conf_free(c);
	}
}
END_TEST

START_TEST(t06_defaults)
{
	struct conf *c = expect_good(NULL, NULL, NULL, NULL);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char want[256];

	ck_assert_uint_eq(c->daemon.workers, ncpu > 64 ? 64 : (unsigned)ncpu);
	snprintf(want, sizeof(want), "%s/var/rtgtd.sock", tmpdir);
	ck_assert_str_eq(c->daemon.control, want);
	ck_assert_str_eq(c->daemon.state_dir, "/var/lib/rtgt");
	ck_assert_int_eq(c->daemon.log_level, CONF_LOG_INFO);
	ck_assert_uint_eq(c->daemon.max_sessions, 64);
	ck_assert_uint_eq(c->daemon.max_connections, 256);
	ck_assert_uint_eq(c->daemon.login_timeout_s, 15);
	ck_assert_uint_eq(c->daemon.nop_interval_s, 10);
	ck_assert_uint_eq(c->daemon.nop_timeout_s, 30);
	ck_assert_uint_eq(c->daemon.queue_depth, 128);
	ck_assert_uint_eq(c->pools[0].chunk, 64 << 10);
	ck_assert_uint_eq(c->pools[0].create_size, 0);
	ck_assert(!c->pools[0].direct_io);
	ck_assert(!c->pools[0].hdd.enabled);
	ck_assert_uint_eq(c->pools[0].n_spares, 0);
	snprintf(want, sizeof(want), "%s/d1", tmpdir);
	ck_assert_str_eq(c->pools[0].member_paths[1], want);
	ck_assert(c->targets[0].allow_all);
	ck_assert_ptr_null(c->targets[0].alias);
	ck_assert_ptr_null(c->targets[0].chap.user);
	ck_assert_str_eq(c->path, cfgpath);
	ck_assert_str_eq(c->dir, tmpdir);
	ck_assert_str_eq(conf_level_name(c->pools[0].level), "raid5");
	ck_assert_ptr_null(conf_pool_find(c, "nope"));
	ck_assert_ptr_nonnull(conf_portal_find(c, "p1"));
	conf_free(c);

	c = expect_good("daemon = { workers = 3; log_level = \"debug\"; control = \"/tmp/x.sock\";\n"
			"  state_dir = \"st\";\n"
			"  max_sessions = 8; max_connections = 8; login_timeout = 5;\n"
			"  nop_interval = 0; nop_timeout = 7; queue_depth = 32; };\n",
			NULL, NULL, NULL);
	ck_assert_uint_eq(c->daemon.workers, 3);
	ck_assert_int_eq(c->daemon.log_level, CONF_LOG_DEBUG);
	ck_assert_str_eq(c->daemon.control, "/tmp/x.sock");
	snprintf(want, sizeof(want), "%s/st", tmpdir);
	ck_assert_str_eq(c->daemon.state_dir, want);
	ck_assert_uint_eq(c->daemon.max_sessions, 8);
	ck_assert_uint_eq(c->daemon.login_timeout_s, 5);
	ck_assert_uint_eq(c->daemon.nop_interval_s, 0);
	ck_assert_uint_eq(c->daemon.nop_timeout_s, 7);
	ck_assert_uint_eq(c->daemon.queue_depth, 32);
	conf_free(c);
}
END_TEST

START_TEST(t07_unknown_keys)
{
	struct conf *c = NULL;
	const char *text =
		"daemon = { workrs = 2; };\n"                                         /* 1 */
		"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		"  chunck = \"64K\"; } );\n"                                          /* 3 */
		"portals = ( { name = \"p\"; listen = \"127.0.0.1:3260\"; lissen = 1; } );\n"
		"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p\");\n"
		"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; sise = 1; } );\n"
		"  chap = { user = \"u\"; secret = \"123456789012\"; usr = \"x\"; };\n"  /* 7 */
		"  alow = ( \"ALL\" ); } );\n"                                        /* 8 */
		"extra = 1;\n";                                                       /* 9 */

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ck_assert_ptr_null(c);
	ASSERT_ERR(1, "unknown key 'workrs' (did you mean 'workers'?)");
	ASSERT_ERR(3, "unknown key 'chunck' (did you mean 'chunk'?)");
	ASSERT_ERR(4, "unknown key 'lissen'");
	ASSERT_ERR(6, "unknown key 'sise'");
	ASSERT_ERR(7, "unknown key 'usr'");
	ASSERT_ERR(8, "unknown key 'alow'");
	ASSERT_ERR(9, "unknown key 'extra'");
	ck_assert_uint_eq(err_lines(), 7);
}
END_TEST

START_TEST(t08_wrong_types)
{
	struct conf *c = NULL;
	const char *text =
		"daemon = { workers = \"2\"; log_level = 1; control = \"\"; };\n"        /* 1 */
		"pools = ( { name = \"tank\"; level = \"raid1\"; members = \"a\";\n"      /* 2 */
		"  direct_io = 1; chunk = 1.5; rebuild_mbps = -1; } );\n"               /* 3 */
		"portals = { name = \"p\"; listen = \"127.0.0.1:3260\"; };\n"           /* 4 */
		"targets = ( \"x\" );\n";                                               /* 5 */

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ASSERT_ERR(1, "workers must be an integer, not a string");
	ASSERT_ERR(1, "log_level must be a string, not an integer");
	ASSERT_ERR(1, "control must not be empty");
	ASSERT_ERR(2, "members must be a list of strings");
	ASSERT_ERR(3, "direct_io must be true or false");
	ASSERT_ERR(3, "chunk must be a size string");
	ASSERT_ERR(3, "rebuild_mbps = -1 is out of range");
	ASSERT_ERR(4, "portals must be a list");
	ASSERT_ERR(5, "targets[0] must be a group");
}
END_TEST

START_TEST(t09_syntax_error_and_io)
{
	struct conf *c = NULL;
	const char *text = "daemon = {\n  workers = 2;\n  control = \"x\"\n  log_level = ;\n};\n";
	FILE *errs;

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ASSERT_ERR(4, "syntax error");
	ck_assert_uint_eq(err_lines(), 1);

	ck_assert_int_eq(load("", &c), -EINVAL);
	ASSERT_ERR(1, "missing required list 'portals'");
	ASSERT_ERR(1, "missing required list 'targets'");

	free(errbuf);
	errbuf = NULL;
	errs = open_memstream(&errbuf, &errlen);
	ck_assert_int_eq(conf_load("/nonexistent/rtgt.conf", &c, errs), -ENOENT);
	fclose(errs);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(errbuf, "/nonexistent/rtgt.conf: cannot open"));
}
END_TEST

START_TEST(t10_levels_and_member_counts)
{
	static const struct { const char *level; unsigned n; bool ok; } cases[] = {
		{ "raid0", 1, true }, { "raid1", 1, false }, { "raid1", 2, true },
		{ "raid5", 2, false }, { "raid5", 3, true }, { "raid6", 3, false },
		{ "raid6", 4, true }, { "raid10", 2, false }, { "raid10", 5, false },
		{ "raid10", 4, true }, { "raid10", 6, true }, { "raid0", 0, false },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char pools[512], *p = pools;
		struct conf *c = NULL;
		int ret;

		p += sprintf(p, "pools = ( { name = \"tank\"; level = \"%s\"; members = (",
			     cases[i].level);
		for (unsigned m = 0; m < cases[i].n; m++)
			p += sprintf(p, "%s\"m%u\"", m ? ", " : "", m);
		sprintf(p, "); } );\n");
		ret = load_parts(NULL, pools, NULL, NULL, &c);
		ck_assert_msg((ret == 0) == cases[i].ok, "%s with %u members: %d\n%s",
			      cases[i].level, cases[i].n, ret, errbuf);
		if (!cases[i].ok)
			ck_assert_ptr_nonnull(strstr(errbuf, cases[i].level));
		conf_free(c);
	}
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid7\"; members = (\"a\"); } );\n",
		   NULL, NULL, "level \"raid7\" is not one of");
	expect_bad(NULL, "pools = ( { name = \"tank\"; members = (\"a\"); } );\n", NULL, NULL,
		   "missing required key 'level'");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; } );\n", NULL, NULL,
		   "missing required key 'members'");
	expect_bad(NULL, "pools = ( { level = \"raid0\"; members = (\"a\"); } );\n", NULL, NULL,
		   "missing required key 'name'");
	expect_bad(NULL, "pools = ( { name = \"a b\"; level = \"raid0\"; members = (\"a\"); } );\n",
		   NULL, NULL, "name must be 1..63 characters");
	expect_bad(NULL,
		   "pools = ( { name = \"tank\"; level = \"raid0\"; members = (\"a\"); },\n"
		   "          { name = \"tank\"; level = \"raid0\"; members = (\"b\"); } );\n",
		   NULL, NULL, "pool name 'tank' is already used at line 1");
}
END_TEST

START_TEST(t11_chunk_and_sizes)
{
	static const struct { const char *chunk; bool ok; } cases[] = {
		{ "4K", true }, { "64K", true }, { "16M", true }, { "1M", true },
		{ "2K", false }, { "32M", false }, { "48K", false }, { "0", false }, { "80%", false },
	};
	struct conf *c;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char pools[256];
		int ret;

		c = NULL;
		snprintf(pools, sizeof(pools),
			 "pools = ( { name = \"tank\"; level = \"raid5\"; chunk = \"%s\";\n"
			 "  members = (\"a\", \"b\", \"c\"); } );\n", cases[i].chunk);
		ret = load_parts(NULL, pools, NULL, NULL, &c);
		ck_assert_msg((ret == 0) == cases[i].ok, "chunk %s: %d\n%s", cases[i].chunk, ret,
			      errbuf);
		if (cases[i].ok) {
			struct conf_size s;

			conf_parse_size(cases[i].chunk, false, &s);
			ck_assert_uint_eq(c->pools[0].chunk, s.bytes);
		}
		conf_free(c);
	}
	/* integers are bytes */
	c = expect_good(NULL,
			"pools = ( { name = \"tank\"; level = \"raid5\"; chunk = 131072;\n"
			"  members = (\"a\", \"b\", \"c\"); create_size = 1073741824L; } );\n",
			NULL, NULL);
	ck_assert_uint_eq(c->pools[0].chunk, 128 << 10);
	ck_assert_uint_eq(c->pools[0].create_size, 1ULL << 30);
	conf_free(c);
	expect_bad(NULL,
		   "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  create_size = \"512K\"; } );\n", NULL, NULL, "create_size must be at least 1M");
	expect_bad(NULL,
		   "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  create_size = \"50%\"; } );\n", NULL, NULL, "a percentage is not allowed here");
	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1000\"; } ); } );\n",
		   "size must be a multiple of 4K");
	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"101%\"; } ); } );\n",
		   "is not a size");
}
END_TEST

START_TEST(t12_member_paths_unique)
{
	struct conf *c = NULL;
	char text[1024];

	/* the same file written three ways, once as a spare of another pool */
	snprintf(text, sizeof(text),
		 "pools = ( { name = \"a\"; level = \"raid1\"; members = (\"d0\", \"d1\"); },\n"
		 "  { name = \"b\"; level = \"raid1\"; members = (\"x/../d0\", \"d2\");\n"
		 "    spares = (\"%s/d1\", \"./d2\"); } );\n"
		 "%s%s", tmpdir, DEF_PORTALS,
		 "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
		 "  luns = ( { lun = 0; pool = \"a\"; volume = \"v\"; size = \"1G\"; } ); } );\n");
	ck_assert_int_eq(load(text, &c), -EINVAL);
	ASSERT_ERR(2, "member \"x/../d0\"");
	ASSERT_ERR(2, "already used by pool 'a' at line 1");
	ASSERT_ERR(3, "spare \"");
	ASSERT_ERR(3, "spare \"./d2\"");
	ASSERT_ERR(3, "already used by pool 'b' at line 2");
	ck_assert_uint_eq(err_lines(), 3);

	/* distinct files pass, spares are recorded resolved */
	c = expect_good(NULL,
			"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"d0\", \"/dev/sdb\");\n"
			"  spares = (\"s0\"); } );\n", NULL, NULL);
	ck_assert_uint_eq(c->pools[0].n_spares, 1);
	ck_assert_str_eq(c->pools[0].spares[0], "s0");
	ck_assert_str_eq(c->pools[0].member_paths[1], "/dev/sdb");
	conf_free(c);
}
END_TEST

START_TEST(t13_portals)
{
	struct conf *c;
	const char *text =
		"portals = ( { name = \"a\"; listen = \"127.0.0.1:3260\"; },\n"      /* 1 */
		"  { name = \"a\"; listen = \"127.0.0.2:3260\"; },\n"               /* 2 */
		"  { name = \"b\"; listen = \"127.0.0.1:3260\"; },\n"               /* 3 */
		"  { name = \"c\"; listen = \"127.0.0.1:70000\"; },\n"              /* 4 */
		"  { name = \"d\"; listen = \"0.0.0.0:3260\"; },\n"                 /* 5 */
		"  { name = \"e\"; listen = \"[::1]:3260\"; },\n"                   /* 6 */
		"  { name = \"f\"; listen = \"[0:0::1]:3260\"; },\n"                /* 7 */
		"  { name = \"g\"; } );\n";                                         /* 8 */
	char full[2048];

	snprintf(full, sizeof(full), "%s%s%s", DEF_POOLS, text,
		 "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"a\");\n"
		 "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } ); } );\n");
	c = NULL;
	ck_assert_int_eq(load(full, &c), -EINVAL);
	ASSERT_ERR(3, "portal name 'a' is already used at line 2");
	ASSERT_ERR(4, "listen address 127.0.0.1:3260 is already used by portal 'a'");
	ASSERT_ERR(5, "port that is not a number in 1..65535");
	ASSERT_ERR(6, "overlaps the wildcard address");
	ASSERT_ERR(8, "already used by portal 'e'");
	ASSERT_ERR(9, "missing required key 'listen'");

	c = expect_good(NULL, NULL,
			"portals = ( { name = \"a\"; listen = \"127.0.0.1:3260\"; },\n"
			"  { name = \"b\"; listen = \"127.0.0.1:3261\"; },\n"
			"  { name = \"c\"; listen = \"[::1]:3260\"; } );\n",
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"c\", \"a\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } ); } );\n");
	ck_assert_uint_eq(c->n_portals, 3);
	ck_assert_uint_eq(c->portals[2].tpgt, 3);
	ck_assert_int_eq(c->portals[2].family, AF_INET6);
	ck_assert_str_eq(c->portals[2].host, "::1");
	ck_assert_str_eq(c->portals[2].listen, "[::1]:3260");
	ck_assert_uint_eq(c->targets[0].n_portals, 2);
	ck_assert_uint_eq(c->targets[0].portals[0], 2);
	ck_assert_uint_eq(c->targets[0].portals[1], 0);
	ck_assert_ptr_eq(conf_portal_find(c, "b"), &c->portals[1]);
	conf_free(c);
	expect_bad(NULL, NULL, "portals = ( );\n", NULL, "portals is empty");
}
END_TEST

START_TEST(t14_targets)
{
	struct conf *c = NULL;
	const char *text =
		"pools = ( { name = \"tank\"; level = \"raid0\"; members = (\"d0\"); } );\n"   /* 1 */
		"portals = ( { name = \"p\"; listen = \"127.0.0.1:3260\"; } );\n"              /* 2 */
		"targets = (\n"                                                                 /* 3 */
		" { iqn = \"iqn.2026-11.org.rtgt:A\"; portals = (\"p\", \"q\", \"p\");\n"       /* 4 */
		"   luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; },\n"  /* 5 */
		"            { lun = 0; pool = \"pool2\"; volume = \"w\"; size = \"1G\"; },\n" /* 6 */
		"            { lun = 256; pool = \"tank\"; volume = \"bad/name\"; size = \"1G\"; },\n"
		"            { pool = \"tank\"; volume = \"x\"; } ); },\n"                     /* 8 */
		" { iqn = \"iqn.2026-11.org.rtgt:b\"; portals = (\"p\");\n"                     /* 9 */
		"   luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } ); },\n"
		" { iqn = \"iqn.2026-11.org.rtgt:b\"; portals = ();\n"                          /* 11 */
		"   luns = ( ); },\n"                                                           /* 12 */
		" { alias = \"no iqn\"; luns = ( { lun = 1; pool = \"tank\"; volume = \"y\"; size = \"1G\"; } ); }\n"
		");\n";

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ASSERT_ERR(4, "iqn must be lowercase");
	ASSERT_ERR(4, "portal 'q' is not defined");
	ASSERT_ERR(4, "portal 'p' is listed twice");
	ASSERT_ERR(6, "lun 0 is already used at line 5");
	ASSERT_ERR(6, "pool 'pool2' is not defined");
	ASSERT_ERR(7, "lun = 256 is out of range 0..255");
	ASSERT_ERR(7, "volume name \"bad/name\"");
	ASSERT_ERR(8, "missing required key 'lun'");
	ASSERT_ERR(8, "missing required key 'size'");
	ASSERT_ERR(11, "portals is empty");
	ASSERT_ERR(12, "luns is empty");
	ASSERT_ERR(11, "target iqn 'iqn.2026-11.org.rtgt:b' is already used at line 9");
	ASSERT_ERR(13, "targets[3]: missing required key 'iqn'");
	ASSERT_ERR(13, "missing required list 'portals'");

	expect_bad(NULL, NULL, NULL, "targets = ( );\n", "targets is empty");

	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"eui.0123456789abcdef\"; alias = \"x y\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 7; pool = \"tank\"; volume = \"v\"; size = \"1G\"; },\n"
			"           { lun = 0; pool = \"tank\"; volume = \"w\"; size = \"2G\"; } ); } );\n");
	ck_assert_str_eq(c->targets[0].alias, "x y");
	ck_assert_uint_eq(c->targets[0].n_luns, 2);
	ck_assert_uint_eq(c->targets[0].luns[0].lun, 7);
	ck_assert_uint_eq(c->targets[0].luns[1].size.bytes, 2ULL << 30);
	ck_assert_str_eq(c->targets[0].luns[1].volume, "w");
	ck_assert_ptr_eq(conf_target_find(c, "eui.0123456789abcdef"), &c->targets[0]);
	conf_free(c);
}
END_TEST

static const char *TWO_POOLS =
	"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); },\n"
	"          { name = \"ceph\"; level = \"rbd\"; ceph_conf = \"ceph.conf\"; rbd_pool = \"rbd\"; } );\n";

START_TEST(t15_shared_volumes_and_percentages)
{
	struct conf *c;

	/* one volume behind two LUNs of two targets: fine with equal sizes */
	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"60%\"; } ); },\n"
			" { iqn = \"iqn.2026-11.org.rtgt:b\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"60%\"; },\n"
			"           { lun = 1; pool = \"tank\"; volume = \"w\"; size = \"40%\"; } ); } );\n");
	conf_free(c);

	c = NULL;
	ck_assert_int_eq(load_parts(NULL, NULL, NULL,
				    "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
				    "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"60%\"; } ); },\n"
				    " { iqn = \"iqn.2026-11.org.rtgt:b\"; portals = (\"p1\");\n"
				    "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; },\n"
				    "           { lun = 1; pool = \"tank\"; volume = \"w\"; size = \"41%\"; } ); } );\n",
				    &c), -EINVAL);
	/* the default daemon section is empty, pools take line 1, portals 2 */
	ASSERT_ERR(6, "volume 'tank/v' has size 1073741824 bytes here but 60% at line 4");
	ASSERT_ERR(7, "pool 'tank': percentage sizes of its volumes add up to more than 100%");
	ck_assert_uint_eq(err_lines(), 2);

	expect_bad(NULL, TWO_POOLS, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"ceph\"; volume = \"v\"; size = \"10%\"; } ); } );\n",
		   "rbd volumes need an absolute size");
}
END_TEST

START_TEST(t16_allow)
{
	struct conf *c;

	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
			"  allow = ( \"iqn.1993-08.org.debian:01:abc\", \"naa.0123456789abcdef\" ); } );\n");
	ck_assert(!c->targets[0].allow_all);
	ck_assert_uint_eq(c->targets[0].n_allow, 2);
	ck_assert_str_eq(c->targets[0].allow[1], "naa.0123456789abcdef");
	conf_free(c);

	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
			"  allow = [ \"ALL\" ]; } );\n");
	ck_assert(c->targets[0].allow_all);
	ck_assert_uint_eq(c->targets[0].n_allow, 0);
	conf_free(c);

	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
		   "  allow = ( \"ALL\", \"iqn.1993-08.org.debian:01:abc\" ); } );\n",
		   "allow mixes \"ALL\" with initiator names");
	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
		   "  allow = ( \"all\" ); } );\n", "allow \"all\": initiator name must start with");
	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
		   "  allow = ( ); } );\n", "allow is empty");
}
END_TEST

static void chap_case(const char *chap, const char *needle)
{
	char targets[1024];

	snprintf(targets, sizeof(targets),
		 "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		 "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
		 "  chap = %s; } );\n", chap);
	if (needle) {
		expect_bad(NULL, NULL, NULL, targets, needle);
	} else {
		struct conf *c = expect_good(NULL, NULL, NULL, targets);

		conf_free(c);
	}
}

START_TEST(t17_chap)
{
	struct conf *c;

	chap_case("{ user = \"u\"; }", "user and secret must be given together");
	chap_case("{ secret = \"123456789012\"; }", "user and secret must be given together");
	chap_case("{ user = \"u\"; secret = \"12345678901\"; }", "secret must be 12..255");
	chap_case("{ mutual_user = \"m\"; mutual_secret = \"abcdefghijkl\"; }",
		  "mutual CHAP needs user and secret");
	chap_case("{ user = \"u\"; secret = \"123456789012\"; mutual_user = \"m\"; }",
		  "mutual_user and mutual_secret must be given together");
	chap_case("{ user = \"u\"; secret = \"123456789012\"; mutual_user = \"m\";"
		  " mutual_secret = \"123456789012\"; }", "mutual_secret must differ from secret");
	chap_case("{ user = \"u\"; secret = \"123456789012\"; mutual_user = \"m\";"
		  " mutual_secret = \"short\"; }", "mutual_secret must be 12..255");
	chap_case("{ }", NULL);

	/* longer than 16: accepted, with a warning */
	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
			"  chap = { user = \"u\"; secret = \"0123456789abcdefg\";\n"
			"           mutual_user = \"m\"; mutual_secret = \"abcdefghijkl\"; }; } );\n");
	ASSERT_ERR(5, "warning: ");
	ASSERT_ERR(5, "Microsoft");
	ck_assert_uint_eq(err_lines(), 1);
	ck_assert_str_eq(c->targets[0].chap.user, "u");
	ck_assert_str_eq(c->targets[0].chap.secret, "0123456789abcdefg");
	ck_assert_str_eq(c->targets[0].chap.mutual_user, "m");
	ck_assert_str_eq(c->targets[0].chap.mutual_secret, "abcdefghijkl");
	conf_free(c);
}
END_TEST

START_TEST(t18_rbd_pools)
{
	struct conf *c;
	char want[256];

	c = expect_good(NULL, TWO_POOLS, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"ceph\"; volume = \"img\"; size = \"10G\"; } ); } );\n");
	ck_assert_int_eq(c->pools[1].level, CONF_RBD);
	snprintf(want, sizeof(want), "%s/ceph.conf", tmpdir);
	ck_assert_str_eq(c->pools[1].ceph_conf, want);
	ck_assert_str_eq(c->pools[1].rbd_pool, "rbd");
	ck_assert_ptr_null(c->pools[1].ceph_id);
	ck_assert_uint_eq(c->pools[1].n_members, 0);
	ck_assert(c->pools[1].rbd_thick);
	conf_free(c);
	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); },\n"
			"          { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\";"
			" rbd_pool = \"r\"; thick = false; } );\n", NULL, NULL);
	ck_assert(!c->pools[1].rbd_thick);
	ck_assert_uint_eq(c->pools[1].provision_mbps, 0);
	conf_free(c);
	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); },\n"
			"          { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\";"
			" rbd_pool = \"r\"; provision_mbps = 200; } );\n", NULL, NULL);
	ck_assert_uint_eq(c->pools[1].provision_mbps, 200);
	ck_assert_uint_eq(c->pools[0].provision_mbps, 0);
	conf_free(c);
	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";"
		   " provision_mbps = -1; } );\n", NULL, NULL, "provision_mbps = -1 is out of range 0..1000000");
	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";"
		   " provision_mbps = \"fast\"; } );\n", NULL, NULL, "provision_mbps must be an integer");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");"
		   " provision_mbps = 100; } );\n", NULL, NULL, "provision_mbps is only valid for level rbd");
	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";"
		   " thick = 1; } );\n", NULL, NULL, "thick must be true or false");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid0\"; members = (\"a\");"
		   " thick = false; } );\n", NULL, NULL, "thick is only valid for level rbd");

	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; rbd_pool = \"rbd\"; } );\n",
		   NULL, NULL, "missing required key 'ceph_conf'");
	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";"
		   " members = (\"a\"); } );\n", NULL, NULL, "members is not valid for an rbd pool");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid0\"; members = (\"a\");"
		   " rbd_pool = \"r\"; } );\n", NULL, NULL, "rbd_pool is only valid for level rbd");
}
END_TEST

START_TEST(t19_hdd_model)
{
	struct conf *c;

	c = expect_good(NULL,
			"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
			"  hdd = { mbps = 260; avg_seek_ms = 8.5; rpm = 7200; }; rebuild_mbps = 50;\n"
			"  direct_io = true; } );\n", NULL, NULL);
	ck_assert(c->pools[0].hdd.enabled);
	ck_assert(c->pools[0].hdd.mbps == 260.0);
	ck_assert(c->pools[0].hdd.avg_seek_ms == 8.5);
	ck_assert_uint_eq(c->pools[0].hdd.rpm, 7200);
	ck_assert(!c->pools[0].hdd.write_through);   /* default: cache on */
	ck_assert_uint_eq(c->pools[0].rebuild_mbps, 50);
	ck_assert(c->pools[0].direct_io);
	conf_free(c);

	c = expect_good(NULL,
			"pools = ( { name = \"tank\"; level = \"raid5\"; members = (\"a\", \"b\", \"c\");\n"
			"  hdd = { mbps = 260; avg_seek_ms = 8.5; rpm = 7200; write_cache = false; }; } );\n",
			NULL, NULL);
	ck_assert(c->pools[0].hdd.enabled);
	ck_assert(c->pools[0].hdd.write_through);
	ck_assert_uint_eq(c->pools[0].hdd.rpm, 7200);
	conf_free(c);
	c = expect_good(NULL,
			"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
			"  hdd = { mbps = 260; avg_seek_ms = 8.5; rpm = 7200; write_cache = true; }; } );\n",
			NULL, NULL);
	ck_assert(!c->pools[0].hdd.write_through);
	conf_free(c);
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; avg_seek_ms = 1; rpm = 7200; write_cache = \"off\"; }; } );\n",
		   NULL, NULL, "hdd: write_cache must be true or false, not a string");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; avg_seek_ms = 1; rpm = 7200; write_cache = 0; }; } );\n",
		   NULL, NULL, "write_cache must be true or false");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; avg_seek_ms = 1; rpm = 7200; writecache = false; }; } );\n",
		   NULL, NULL, "writecache");

	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 0.0; avg_seek_ms = 8.5; rpm = 7200; }; } );\n", NULL, NULL,
		   "hdd: mbps must be > 0");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; avg_seek_ms = -1.0; rpm = 7200; }; } );\n", NULL, NULL,
		   "avg_seek_ms must be >= 0");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; avg_seek_ms = 1; rpm = 0; }; } );\n", NULL, NULL,
		   "rpm = 0 is out of range");
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  hdd = { mbps = 100; rpm = 5400; }; } );\n", NULL, NULL,
		   "missing required key 'avg_seek_ms'");
}
END_TEST

START_TEST(t20_daemon_limits)
{
	char daemon[512];

	expect_bad("daemon = { workers = 65; };\n", NULL, NULL, NULL, "workers = 65 is out of range 0..64");
	expect_bad("daemon = { workers = -1; };\n", NULL, NULL, NULL, "out of range");
	expect_bad("daemon = { log_level = \"verbose\"; };\n", NULL, NULL, NULL,
		   "log_level \"verbose\" is not one of error, warn, info, debug");
	expect_bad("daemon = { max_sessions = 10; max_connections = 5; };\n", NULL, NULL, NULL,
		   "max_connections (5) is below max_sessions (10)");
	expect_bad("daemon = { queue_depth = 0; };\n", NULL, NULL, NULL, "queue_depth = 0");
	expect_bad("daemon = ( 1 );\n", NULL, NULL, NULL, "daemon must be a group");
	snprintf(daemon, sizeof(daemon), "daemon = { control = \"/%0120d.sock\"; };\n", 0);
	expect_bad(daemon, NULL, NULL, NULL, "longer than a unix socket allows");
	expect_bad("daemon = { control = \"d0\"; };\n", NULL, NULL, NULL,
		   "control socket");
}
END_TEST

START_TEST(t21_every_problem_reported)
{
	struct conf *c = NULL;
	const char *text =
		"daemon = { workers = 99; log_level = \"loud\"; };\n"
		"pools = ( { name = \"tank\"; level = \"raid5\"; chunk = \"3K\"; members = (\"a\"); } );\n"
		"portals = ( { name = \"p\"; listen = \"1.2.3.4\"; } );\n"
		"targets = ( { iqn = \"iqn.bad\"; portals = (\"zz\");\n"
		"  luns = ( { lun = 300; pool = \"nope\"; volume = \"\"; size = \"x\"; } ); } );\n";

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_uint_eq(err_lines(), 11);
	ASSERT_ERR(1, "workers");
	ASSERT_ERR(1, "log_level");
	ASSERT_ERR(2, "power of two");
	ASSERT_ERR(2, "raid5 needs at least 3 members, has 1");
	ASSERT_ERR(3, "listen \"1.2.3.4\"");
	ASSERT_ERR(4, "iqn needs a date");
	ASSERT_ERR(4, "portal 'zz' is not defined");
	ASSERT_ERR(5, "lun = 300");
	ASSERT_ERR(5, "pool 'nope' is not defined");
	ASSERT_ERR(5, "volume must not be empty");
	ASSERT_ERR(5, "size = \"x\" is not a size");
}
END_TEST

START_TEST(t22_touches_nothing_on_disk)
{
	struct conf *c;
	char p[200];

	c = expect_good("daemon = { control = \"run/ctl.sock\"; };\n",
			"pools = ( { name = \"tank\"; level = \"raid5\"; create_size = \"1G\";\n"
			"  members = (\"var/d0\", \"var/d1\", \"var/d2\"); } );\n", NULL, NULL);
	snprintf(p, sizeof(p), "%s/var", tmpdir);
	ck_assert_int_eq(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/run", tmpdir);
	ck_assert_int_eq(access(p, F_OK), -1);
	ck_assert_uint_eq(c->pools[0].create_size, 1ULL << 30);
	conf_free(c);
}
END_TEST

START_TEST(t23_log_lines)
{
	char path[160], buf[4096], big[3000];
	regex_t re;
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/log.txt", tmpdir);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);

	conf_log_set_level(CONF_LOG_INFO);
	LOG_INFO("raid", "pool %s is %s", "tank", "degraded");
	LOG_DBG("raid", "not shown %d", 1);
	LOG_WARN("iscsi", "two\nlines\n");
	/* a peer's name: control bytes, ESC, DEL, high bytes, the backslash */
	LOG_WARN("iscsi", "initiator %s", "iqn.x:a\r\x1b[31m\x7f\xff\\z");
	conf_log_set_level(CONF_LOG_ERROR);
	LOG_WARN("iscsi", "filtered");
	LOG_ERR("net", "kept");
	conf_log_set_level(CONF_LOG_DEBUG);
	ck_assert_int_eq(conf_log_get_level(), CONF_LOG_DEBUG);
	LOG_DBG("conf", "debug now");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	LOG_INFO("conf", "%s", big);

	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';

	ck_assert_int_eq(regcomp(&re,
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
		"INFO \\[raid\\] pool tank is degraded\n"
		"[^ ]+Z WARN \\[iscsi\\] two\\\\x0alines\n"
		"[^ ]+Z WARN \\[iscsi\\] initiator iqn\\.x:a\\\\x0d\\\\x1b\\[31m\\\\x7f\\\\xff\\\\x5cz\n"
		"[^ ]+Z ERROR \\[net\\] kept\n"
		"[^ ]+Z DEBUG \\[conf\\] debug now\n"
		"[^ ]+Z INFO \\[conf\\] x+\\.\\.\\.\n$", REG_EXTENDED), 0);
	ck_assert_msg(regexec(&re, buf, 0, NULL, 0) == 0, "log output:\n%.600s", buf);
	regfree(&re);
	ck_assert_ptr_null(strstr(buf, "not shown"));
	ck_assert_ptr_null(strstr(buf, "filtered"));

	enum conf_log_level l;
	ck_assert_int_eq(conf_log_level_parse("warn", &l), 0);
	ck_assert_int_eq(l, CONF_LOG_WARN);
	ck_assert_int_eq(conf_log_level_parse("WARN", &l), -EINVAL);
}
END_TEST

/* start_degraded: boolean, default false, not for rbd pools */
START_TEST(t24_start_degraded)
{
	struct conf *c;

	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); } );\n",
			NULL, NULL);
	ck_assert(!c->pools[0].start_degraded);
	conf_free(c);
	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
			"  start_degraded = true; } );\n", NULL, NULL);
	ck_assert(c->pools[0].start_degraded);
	conf_free(c);
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
		   "  start_degraded = \"yes\"; } );\n", NULL, NULL, "start_degraded must be true or false");
	expect_bad(NULL, "pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";"
		   " start_degraded = true; } );\n", NULL, NULL,
		   "start_degraded is not valid for an rbd pool");
}
END_TEST

START_TEST(t25_portal_tpgt)
{
	struct conf *c = NULL;
	const char *text =
		"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); } );\n" /* 1 */
		"portals = (\n"                                                                  /* 2 */
		" { name = \"a\"; listen = \"127.0.0.1:3260\"; tpgt = 2; },\n"                  /* 3 */
		" { name = \"b\"; listen = \"127.0.0.2:3260\"; },\n"                            /* 4 */
		" { name = \"c\"; listen = \"127.0.0.3:3260\"; tpgt = 2; },\n"                  /* 5 */
		" { name = \"d\"; listen = \"127.0.0.4:3260\"; tpgt = 0; },\n"                  /* 6 */
		" { name = \"e\"; listen = \"127.0.0.5:3260\"; tpgt = 65536; },\n"              /* 7 */
		" { name = \"f\"; listen = \"127.0.0.6:3260\"; tpgt = \"7\"; }\n"               /* 8 */
		");\n"                                                                           /* 9 */
		"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"a\");\n"          /* 10 */
		"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); } );\n";

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ck_assert_ptr_null(c);
	/* portal b defaults to its position, 2, which a already took */
	ASSERT_ERR(4, "portal 'b': tpgt 2 (its position in the list) is already used by portal 'a' (line 3)");
	ASSERT_ERR(5, "portal 'c': tpgt 2 is already used by portal 'a' (line 3)");
	ASSERT_ERR(6, "tpgt = 0 is out of range 1..65535");
	ASSERT_ERR(7, "tpgt = 65536 is out of range 1..65535");
	ASSERT_ERR(8, "tpgt must be an integer");
	ck_assert_uint_eq(err_lines(), 5);

	/* a second node: its only portal takes TPGT 2 */
	c = expect_good(NULL, NULL, "portals = ( { name = \"p1\"; listen = \"127.0.0.1:3260\"; tpgt = 2; } );\n",
			NULL);
	ck_assert_uint_eq(c->portals[0].tpgt, 2);
	ck_assert(c->portals[0].tpgt_set);
	conf_free(c);
	/* explicit and positional mix when they do not collide */
	c = expect_good(NULL, NULL,
			"portals = ( { name = \"p1\"; listen = \"127.0.0.1:3260\"; tpgt = 65535; },\n"
			"            { name = \"p2\"; listen = \"127.0.0.2:3260\"; } );\n", NULL);
	ck_assert_uint_eq(c->portals[0].tpgt, 65535);
	ck_assert_uint_eq(c->portals[1].tpgt, 2);
	ck_assert(!c->portals[1].tpgt_set);
	conf_free(c);
	/* without the key nothing changes */
	c = expect_good(NULL, NULL, NULL, NULL);
	ck_assert_uint_eq(c->portals[0].tpgt, 1);
	ck_assert(!c->portals[0].tpgt_set);
	ck_assert_uint_eq(c->targets[0].n_peer_groups, 0);
	ck_assert_ptr_null(c->targets[0].peer_groups);
	conf_free(c);
}
END_TEST

START_TEST(t26_peer_portal_groups)
{
	struct conf *c = NULL;
	const char *text =
		"pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\"); } );\n" /* 1 */
		"portals = ( { name = \"a\"; listen = \"127.0.0.1:3260\"; },\n"                 /* 2 */
		"            { name = \"b\"; listen = \"127.0.0.2:3260\"; tpgt = 5; } );\n"     /* 3 */
		"targets = (\n"                                                                  /* 4 */
		" { iqn = \"iqn.2026-11.org.rtgt:t1\"; portals = (\"a\", \"b\");\n"             /* 5 */
		"   peer_portal_groups = ( 3,\n"                                                 /* 6 */
		"     1,\n"                                                                      /* 7 */
		"     3,\n"                                                                      /* 8 */
		"     0,\n"                                                                      /* 9 */
		"     70000,\n"                                                                  /* 10 */
		"     \"4\",\n"                                                                  /* 11 */
		"     5 );\n"                                                                    /* 12 */
		"   luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); },\n"
		" { iqn = \"iqn.2026-11.org.rtgt:t2\"; portals = (\"a\"); peer_portal_groups = 2;\n" /* 14 */
		"   luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); }\n"
		");\n";

	ck_assert_int_eq(load(text, &c), -EINVAL);
	ck_assert_ptr_null(c);
	ASSERT_ERR(7, "peer_portal_groups: 1 is the tpgt of this node's own portal 'a' (line 2)");
	ASSERT_ERR(8, "peer_portal_groups lists 3 twice");
	ASSERT_ERR(9, "peer_portal_groups[3] = 0 is out of range 1..65535");
	ASSERT_ERR(10, "peer_portal_groups[4] = 70000 is out of range 1..65535");
	ASSERT_ERR(11, "peer_portal_groups[5] must be an integer TPGT");
	ASSERT_ERR(12, "peer_portal_groups: 5 is the tpgt of this node's own portal 'b' (line 3)");
	ASSERT_ERR(14, "peer_portal_groups must be a list of TPGTs");
	ck_assert_uint_eq(err_lines(), 7);

	/* a TPGT of a portal this target does not use is a fine peer id:
	 * relative port ids are per target */
	c = expect_good(NULL, NULL,
			"portals = ( { name = \"p1\"; listen = \"127.0.0.1:3260\"; },\n"
			"            { name = \"p2\"; listen = \"127.0.0.2:3260\"; } );\n",
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
			"  peer_portal_groups = [ 2, 65535 ];\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); } );\n");
	ck_assert_uint_eq(c->targets[0].n_peer_groups, 2);
	ck_assert_uint_eq(c->targets[0].peer_groups[0], 2);
	ck_assert_uint_eq(c->targets[0].peer_groups[1], 65535);
	conf_free(c);
	/* an empty list is no peers */
	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
			"  peer_portal_groups = ( );\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); } );\n");
	ck_assert_uint_eq(c->targets[0].n_peer_groups, 0);
	conf_free(c);
	/* a misspelt key is caught like every other */
	expect_bad(NULL, NULL, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = (\"p1\");\n"
		   "  peer_portal_group = ( 2 );\n"
		   "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"50%\"; } ); } );\n",
		   "unknown key 'peer_portal_group' (did you mean 'peer_portal_groups'?)");
}
END_TEST

/* The two-node example pair: the same target and image, distinct TPGTs,
 * each naming the other's as its peer. */
START_TEST(t27_two_node_examples)
{
	static const char *const files[] = {
		"conf/examples/rbd-node-a.conf", "conf/examples/rbd-node-b.conf",
	};
	struct conf *c[2];

	for (unsigned i = 0; i < 2; i++) {
		FILE *errs = open_memstream(&errbuf, &errlen);
		int ret = conf_load(files[i], &c[i], errs);

		fclose(errs);
		ck_assert_msg(ret == 0, "%s: %d\n%s", files[i], ret, errbuf);
		ck_assert_msg(errlen == 0, "%s printed:\n%s", files[i], errbuf);
		free(errbuf);
		errbuf = NULL;
		ck_assert_uint_eq(c[i]->n_targets, 1);
		ck_assert_uint_ge(c[i]->targets[0].n_peer_groups, 1);
	}
	ck_assert_str_eq(c[0]->targets[0].iqn, c[1]->targets[0].iqn);
	ck_assert_str_eq(c[0]->targets[0].luns[0].volume, c[1]->targets[0].luns[0].volume);
	ck_assert_str_eq(c[0]->pools[0].rbd_pool, c[1]->pools[0].rbd_pool);
	for (unsigned i = 0; i < 2; i++) {
		const struct conf_target *me = &c[i]->targets[0], *peer = &c[1 - i]->targets[0];

		/* my peers are exactly the other node's TPGTs */
		ck_assert_uint_eq(me->n_peer_groups, peer->n_portals);
		for (unsigned k = 0; k < peer->n_portals; k++) {
			uint16_t tpgt = c[1 - i]->portals[peer->portals[k]].tpgt;
			bool found = false;

			for (unsigned j = 0; j < me->n_peer_groups; j++)
				found |= me->peer_groups[j] == tpgt;
			ck_assert_msg(found, "%s: peer tpgt %u missing", files[i], tpgt);
		}
	}
	conf_free(c[0]);
	conf_free(c[1]);
}
END_TEST

/* Targets text whose allow list (from line 6 on) is @allow. */
static void acl_targets(char *buf, size_t len, const char *allow)
{
	snprintf(buf, len,
		 "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		 "  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
		 "  allow = (\n%s ); } );\n", allow);
}

#define ACL_A "iqn.1993-08.org.debian:01:aaa"
#define ACL_B "iqn.1993-08.org.debian:01:bbb"
#define ACL_GRP(name, chap) "{ initiator = \"" name "\"; chap = " chap "; }"
#define ACL_CHAP_A "{ user = \"ua\"; secret = \"secret-of-a-1\"; }"

static void acl_bad(const char *allow, int line, const char *needle)
{
	char targets[2048];

	acl_targets(targets, sizeof(targets), allow);
	expect_bad(NULL, NULL, NULL, targets, needle);
	ASSERT_ERR(line, needle);
}

START_TEST(t28_per_initiator_chap)
{
	char targets[2048];
	struct conf *c;
	const struct conf_target *t;

	/* a group entry, a plain name, and the target-level chap beside */
	c = expect_good(NULL, NULL, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"1G\"; } );\n"
			"  allow = ( { initiator = \"" ACL_A "\";\n"
			"              chap = { user = \"ua\"; secret = \"secret-of-a-1\";\n"
			"                       mutual_user = \"tgt\"; mutual_secret = \"mutual-of-a-1\"; }; },\n"
			"            \"" ACL_B "\" );\n"
			"  chap = { user = \"shared\"; secret = \"shared-secret\"; }; } );\n");
	t = &c->targets[0];
	ck_assert(!t->allow_all);
	ck_assert_uint_eq(t->n_allow, 2);
	ck_assert_str_eq(t->allow[0], ACL_A);
	ck_assert_str_eq(t->allow[1], ACL_B);
	ck_assert_uint_eq(t->n_acls, 1);
	ck_assert_str_eq(t->acls[0].initiator, ACL_A);
	ck_assert_int_eq(t->acls[0].line, 5);
	ck_assert_str_eq(t->acls[0].chap.user, "ua");
	ck_assert_str_eq(t->acls[0].chap.secret, "secret-of-a-1");
	ck_assert_str_eq(t->acls[0].chap.mutual_user, "tgt");
	ck_assert_str_eq(t->acls[0].chap.mutual_secret, "mutual-of-a-1");
	ck_assert_str_eq(t->chap.user, "shared");
	ck_assert_uint_eq(err_lines(), 0);
	conf_free(c);

	/* "ALL" with groups: anyone, the listed ones only with their secret */
	acl_targets(targets, sizeof(targets),
		    "\"ALL\",\n" ACL_GRP(ACL_A, ACL_CHAP_A) ",\n"
		    ACL_GRP(ACL_B, "{ user = \"ub\"; secret = \"secret-of-b-1\"; }"));
	c = expect_good(NULL, NULL, NULL, targets);
	t = &c->targets[0];
	ck_assert(t->allow_all);
	ck_assert_uint_eq(t->n_allow, 0);
	ck_assert_uint_eq(t->n_acls, 2);
	ck_assert_str_eq(t->acls[1].initiator, ACL_B);
	ck_assert_str_eq(t->acls[1].chap.user, "ub");
	ck_assert_int_eq(t->acls[1].line, 8);
	ck_assert_ptr_null(t->chap.user);
	conf_free(c);

	/* each bad form, on its own line */
	acl_bad(ACL_GRP(ACL_A, "{ user = \"ua\"; secret = \"short\"; }"), 6,
		"allow \"" ACL_A "\": chap: secret must be 12..255 characters, has 5");
	acl_bad(ACL_GRP(ACL_A, "{ user = \"ua\"; secret = \"secret-of-a-1\"; mutual_user = \"m\";"
			       " mutual_secret = \"secret-of-a-1\"; }"), 6,
		"allow \"" ACL_A "\": chap: mutual_secret must differ from secret");
	acl_bad(ACL_GRP(ACL_A, "{ user = \"ua\"; secret = \"secret-of-a-1\"; mutual_user = \"m\";"
			       " mutual_secret = \"mm\"; }"), 6,
		"chap: mutual_secret must be 12..255 characters");
	acl_bad(ACL_GRP(ACL_A, "{ user = \"ua\"; }"), 6,
		"chap: user and secret must be given together");
	acl_bad(ACL_GRP(ACL_A, "{ }"), 6, "chap: missing required user and secret");
	acl_bad("\"" ACL_B "\",\n{ initiator = \"" ACL_A "\"; }", 7,
		"missing required group 'chap'");
	acl_bad("\"" ACL_B "\",\n{ chap = " ACL_CHAP_A "; }", 7,
		"allow[1]: missing required");
	acl_bad("{ initiator = \"Bad name\"; chap = " ACL_CHAP_A "; }", 6,
		"initiator \"Bad name\": initiator name");
	acl_bad(ACL_GRP(ACL_A, ACL_CHAP_A) ",\n" ACL_GRP(ACL_B, ACL_CHAP_A) ",\n"
		ACL_GRP(ACL_A, "{ user = \"x\"; secret = \"secret-of-x-1\"; }"),
		8, "allow \"" ACL_A "\" is listed more than once");
	acl_bad("\"" ACL_A "\",\n" ACL_GRP(ACL_A, ACL_CHAP_A), 7,
		"allow \"" ACL_A "\" is listed more than once");
	acl_bad(ACL_GRP(ACL_A, ACL_CHAP_A) ",\n\"" ACL_A "\"", 7,
		"allow \"" ACL_A "\" is listed more than once");
	acl_bad(ACL_GRP(ACL_A, "{ user = \"ua\"; secret = \"secret-of-a-1\"; usr = \"x\"; }"), 6,
		"unknown key 'usr'");
	acl_bad("{ initiator = \"" ACL_A "\"; chap = " ACL_CHAP_A "; chp = 1; }", 6,
		"unknown key 'chp'");
	acl_bad("\"ALL\",\n\"" ACL_B "\",\n" ACL_GRP(ACL_A, ACL_CHAP_A), 5,
		"allow mixes \"ALL\" with initiator names");
	acl_bad("\"" ACL_B "\",\n42", 7, "allow[1] must be a string or a group");

	/* repeated plain names were accepted before and still are */
	acl_targets(targets, sizeof(targets), "\"" ACL_A "\",\n\"" ACL_A "\"");
	c = expect_good(NULL, NULL, NULL, targets);
	ck_assert_uint_eq(c->targets[0].n_acls, 0);
	conf_free(c);
}
END_TEST

/* Groups for the mapping cases: 3 lines, then pools (4), portals (5),
 * targets from line 6 on. */
#define GROUPS_TXT                                                                 \
	"initiator_groups = ( { name = \"ga\"; members = ( \"" ACL_A "\" ); },\n"  \
	"  { name = \"gb\"; members = ( \"" ACL_B "\" ); },\n"                     \
	"  { name = \"gc\"; members = ( ); } );\n"

/* Targets from line 6: the LUN list from line 8 on is @luns. */
static void map_targets(char *buf, size_t len, const char *luns)
{
	snprintf(buf, len,
		 "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		 "  luns = (\n%s ); } );\n", luns);
}

static void map_bad(const char *luns, int line, const char *needle)
{
	char targets[4096];

	map_targets(targets, sizeof(targets), luns);
	expect_bad(GROUPS_TXT, NULL, NULL, targets, needle);
	ASSERT_ERR(line, needle);
}

#define LUN(n, vol) "{ lun = " #n "; pool = \"tank\"; volume = \"" vol "\"; size = \"1G\";"

START_TEST(t29_initiator_groups_and_mapping)
{
	char targets[4096];
	struct conf *c;
	const struct conf_target *t;

	map_targets(targets, sizeof(targets),
		    LUN(0, "shared") " },\n"
		    LUN(1, "va") " groups = ( { group = \"ga\"; lun = 1; } ); },\n"
		    LUN(2, "vb") " groups = ( { group = \"gb\"; lun = 1; read_only = true; },\n"
		    "   \"ga\" ); },\n"
		    LUN(3, "ro") " read_only = true; groups = ( \"gb\" ); },\n"
		    LUN(4, "hidden") " groups = ( ); }");
	c = expect_good(GROUPS_TXT, NULL, NULL, targets);
	ck_assert_uint_eq(c->n_groups, 3);
	ck_assert_str_eq(c->groups[0].name, "ga");
	ck_assert_uint_eq(c->groups[0].n_members, 1);
	ck_assert_str_eq(c->groups[0].members[0], ACL_A);
	ck_assert_int_eq(c->groups[1].line, 2);
	ck_assert_uint_eq(c->groups[2].n_members, 0);
	ck_assert_ptr_eq(conf_group_of(c, "IQN.1993-08.ORG.DEBIAN:01:BBB"), &c->groups[1]);
	ck_assert_ptr_null(conf_group_of(c, "iqn.1993-08.org.debian:01:ccc"));
	t = &c->targets[0];
	ck_assert(!t->luns[0].masked);
	ck_assert(!t->luns[0].read_only);
	ck_assert(t->luns[1].masked);
	ck_assert_uint_eq(t->luns[1].n_maps, 1);
	ck_assert_uint_eq(t->luns[1].maps[0].group, 0);
	ck_assert_uint_eq(t->luns[1].maps[0].lun, 1);
	ck_assert(!t->luns[1].maps[0].read_only);
	ck_assert_uint_eq(t->luns[2].n_maps, 2);
	ck_assert_uint_eq(t->luns[2].maps[0].group, 1);
	ck_assert_uint_eq(t->luns[2].maps[0].lun, 1);
	ck_assert(t->luns[2].maps[0].read_only);
	ck_assert_int_eq(t->luns[2].maps[0].line, 10);
	ck_assert_uint_eq(t->luns[2].maps[1].group, 0);
	ck_assert_uint_eq(t->luns[2].maps[1].lun, 2);   /* its own number */
	ck_assert(t->luns[3].read_only);
	ck_assert(t->luns[3].maps[0].read_only);        /* inherited */
	ck_assert(t->luns[4].masked);
	ck_assert_uint_eq(t->luns[4].n_maps, 0);
	/* warnings only: an empty group, a LUN nobody sees */
	ck_assert(has_err(3, "warning: initiator group 'gc': members is empty"));
	ck_assert(has_err(13, "warning:"));
	conf_free(c);

	/* every bad form, at its line */
	map_bad(LUN(0, "v") " groups = ( \"nope\" ); }", 8,
		"group 'nope' is not defined in initiator_groups");
	map_bad(LUN(0, "v") " groups = ( \"ga\",\n \"ga\" ); }", 9,
		"group 'ga' is mapped twice to this LUN");
	map_bad(LUN(0, "v") " },\n" LUN(1, "w") " groups = ( { group = \"ga\"; lun = 0; } ); }", 9,
		"group 'ga' would see LUN 0 twice (also at line 8)");
	map_bad(LUN(1, "v") " groups = ( { group = \"gb\"; lun = 5; } ); },\n"
		LUN(2, "w") " groups = ( { group = \"gb\"; lun = 5; } ); }", 9,
		"group 'gb' would see LUN 5 twice");
	map_bad(LUN(0, "v") " groups = ( { group = \"ga\"; lun = 256; } ); }", 8,
		"lun = 256 is out of range 0..255");
	map_bad(LUN(0, "v") " groups = ( { group = \"ga\"; lnu = 1; } ); }", 8,
		"unknown key 'lnu' (did you mean 'lun'?)");
	map_bad(LUN(0, "v") " groups = \"ga\"; }", 8, "groups must be a list");
	map_bad(LUN(0, "v") " groups = ( 3 ); }", 8, "must be a group name or");
	map_bad(LUN(0, "v") " read_only = 1; }", 8, "read_only must be true or false");
	/* a mapping that tries to lift the LUN's read_only: warned, stays read-only */
	map_targets(targets, sizeof(targets),
		    LUN(0, "v") " read_only = true;\n"
		    "  groups = ( { group = \"ga\"; read_only = false; } ); }");
	c = expect_good(GROUPS_TXT, NULL, NULL, targets);
	ck_assert(c->targets[0].luns[0].maps[0].read_only);
	ck_assert(has_err(9, "warning:"));
	conf_free(c);

	/* the groups themselves */
	expect_bad("initiator_groups = ( { name = \"g\"; members = ( \"" ACL_A "\" ); },\n"
		   "  { name = \"h\"; members = ( \"" ACL_A "\" ); } );\n", NULL, NULL, NULL,
		   "is already in group 'g' (line 1)");
	ASSERT_ERR(2, "member \"" ACL_A "\" is already in group 'g'");
	expect_bad("initiator_groups = ( { name = \"g\"; members = ( \"" ACL_A "\",\n"
		   "  \"" ACL_A "\" ); } );\n", NULL, NULL, NULL, "is listed twice");
	ASSERT_ERR(2, "member \"" ACL_A "\" is listed twice");
	expect_bad("initiator_groups = ( { name = \"g\"; members = ( ); },\n"
		   "  { name = \"g\"; members = ( ); } );\n", NULL, NULL, NULL,
		   "the name is already used at line 1");
	expect_bad("initiator_groups = ( { name = \"bad name\"; members = ( ); } );\n", NULL,
		   NULL, NULL, "name must be 1..63 characters");
	expect_bad("initiator_groups = ( { name = \"g\"; } );\n", NULL, NULL, NULL,
		   "missing required list 'members'");
	expect_bad("initiator_groups = ( { name = \"g\"; members = ( \"Not An IQN\" ); } );\n",
		   NULL, NULL, NULL, "member \"Not An IQN\": initiator name");
	expect_bad("initiator_groups = ( { name = \"g\"; membres = ( ); } );\n", NULL, NULL,
		   NULL, "unknown key 'membres' (did you mean 'members'?)");
	expect_bad("initiator_groups = { name = \"g\"; };\n", NULL, NULL, NULL,
		   "initiator_groups must be a list");
}
END_TEST

START_TEST(t30_address_rules)
{
	char targets[2048];
	struct conf_net n;
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	const char *why;
	struct conf *c;
	const struct conf_target *t;

	/* the parser */
	ck_assert_int_eq(conf_net_parse("198.18.0.0/15", &n, &why), 0);
	ck_assert_int_eq(n.family, AF_INET);
	ck_assert_uint_eq(n.prefix, 15);
	ck_assert_int_eq(conf_net_parse("127.0.0.2", &n, &why), 0);
	ck_assert_uint_eq(n.prefix, 32);
	ck_assert_int_eq(conf_net_parse("0.0.0.0/0", &n, &why), 0);
	ck_assert_int_eq(conf_net_parse("fd00::/8", &n, &why), 0);
	ck_assert_int_eq(n.family, AF_INET6);
	ck_assert_int_eq(conf_net_parse("::1", &n, &why), 0);
	ck_assert_uint_eq(n.prefix, 128);
	ck_assert_int_eq(conf_net_parse("198.18.0.1/15", &n, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "host bits"));
	ck_assert_int_eq(conf_net_parse("10.0.0.0/33", &n, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "0..32"));
	ck_assert_int_eq(conf_net_parse("fd00::/129", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("10.0.0.0/", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("10.0.0.0/8x", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("10.0.0.0/-8", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("host.example/8", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("", &n, &why), -EINVAL);
	ck_assert_int_eq(conf_net_parse("/8", &n, &why), -EINVAL);

	/* the matcher: v4, v4-mapped v6, v6, other family, NULL */
	ck_assert_int_eq(conf_net_parse("198.18.0.0/15", &n, &why), 0);
	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "198.19.255.255", &sin->sin_addr);
	ck_assert(conf_net_match(&n, &ss));
	inet_pton(AF_INET, "198.20.0.0", &sin->sin_addr);
	ck_assert(!conf_net_match(&n, &ss));
	inet_pton(AF_INET, "198.17.255.255", &sin->sin_addr);
	ck_assert(!conf_net_match(&n, &ss));
	memset(&ss, 0, sizeof(ss));
	sin6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:198.18.3.4", &sin6->sin6_addr);
	ck_assert(conf_net_match(&n, &ss));
	inet_pton(AF_INET6, "fd00::1", &sin6->sin6_addr);
	ck_assert(!conf_net_match(&n, &ss));
	ck_assert_int_eq(conf_net_parse("fd00::/8", &n, &why), 0);
	ck_assert(conf_net_match(&n, &ss));
	inet_pton(AF_INET6, "fe00::1", &sin6->sin6_addr);
	ck_assert(!conf_net_match(&n, &ss));
	ck_assert(!conf_net_match(&n, NULL));

	/* entries: named with one address, named with a list and chap,
	 * address-only */
	acl_targets(targets, sizeof(targets),
		    "{ initiator = \"" ACL_A "\"; address = \"127.0.0.1\"; },\n"
		    "{ initiator = \"" ACL_B "\"; address = ( \"198.18.0.0/15\", \"::1\" );\n"
		    "  chap = " ACL_CHAP_A "; },\n"
		    "{ address = \"127.0.0.0/8\"; }");
	c = expect_good(NULL, NULL, NULL, targets);
	t = &c->targets[0];
	ck_assert(!t->allow_all);
	ck_assert_uint_eq(t->n_allow, 2);
	ck_assert_uint_eq(t->n_acls, 1);
	ck_assert_str_eq(t->acls[0].initiator, ACL_B);
	ck_assert_uint_eq(t->n_addr_rules, 3);
	ck_assert_str_eq(t->addr_rules[0].initiator, ACL_A);
	ck_assert_uint_eq(t->addr_rules[0].n_nets, 1);
	ck_assert_int_eq(t->addr_rules[0].line, 6);
	ck_assert_uint_eq(t->addr_rules[1].n_nets, 2);
	ck_assert_int_eq(t->addr_rules[1].nets[1].family, AF_INET6);
	ck_assert_ptr_null(t->addr_rules[2].initiator);
	ck_assert_uint_eq(t->addr_rules[2].nets[0].prefix, 8);
	conf_free(c);

	/* "ALL" with a named address rule is fine (anyone, that one only from there) */
	acl_targets(targets, sizeof(targets),
		    "\"ALL\",\n{ initiator = \"" ACL_A "\"; address = \"127.0.0.1\"; }");
	c = expect_good(NULL, NULL, NULL, targets);
	ck_assert(c->targets[0].allow_all);
	ck_assert_uint_eq(c->targets[0].n_addr_rules, 1);
	conf_free(c);

	acl_bad("{ address = \"10.0.0.1/8\"; }", 6, "address \"10.0.0.1/8\" has host bits set");
	acl_bad("{ address = \"10.0.0.0/40\"; }", 6, "prefix length out of range 0..32");
	acl_bad("{ address = \"nas.local\"; }", 6, "is not a numeric IPv4 or IPv6 address");
	acl_bad("{ address = ( ); }", 6, "address is empty");
	acl_bad("{ address = 10; }", 6, "address must be a string");
	acl_bad("{ address = ( \"10.0.0.0/8\", 3 ); }", 6, "address[1] must be a string");
	acl_bad("{ address = \"10.0.0.0/8\"; chap = " ACL_CHAP_A "; }", 6, "chap needs an initiator");
	acl_bad("{ adress = \"10.0.0.0/8\"; }", 6, "unknown key 'adress' (did you mean 'address'?)");
	acl_bad("\"ALL\",\n{ address = \"10.0.0.0/8\"; }", 5,
		"allow mixes \"ALL\" with an entry of addresses only (line 7)");
	acl_bad("{ initiator = \"" ACL_A "\"; address = \"127.0.0.1\"; },\n\"" ACL_A "\"", 7,
		"allow \"" ACL_A "\" is listed more than once");
}
END_TEST

START_TEST(t31_discovery_chap)
{
	struct conf *c;

	c = expect_good("discovery = { chap = { user = \"disc\"; secret = \"discovery-sec1\";\n"
			"  mutual_user = \"tgt\"; mutual_secret = \"discovery-mut1\"; }; };\n",
			NULL, NULL, NULL);
	ck_assert_str_eq(c->discovery_chap.user, "disc");
	ck_assert_str_eq(c->discovery_chap.secret, "discovery-sec1");
	ck_assert_str_eq(c->discovery_chap.mutual_user, "tgt");
	conf_free(c);
	c = expect_good(NULL, NULL, NULL, NULL);
	ck_assert_ptr_null(c->discovery_chap.user);
	conf_free(c);
	c = expect_good("discovery = { chap = { }; };\n", NULL, NULL, NULL);
	ck_assert_ptr_null(c->discovery_chap.user);
	conf_free(c);

	expect_bad("discovery = { chap = { user = \"d\"; secret = \"short\"; }; };\n", NULL, NULL,
		   NULL, "discovery: chap: secret must be 12..255 characters, has 5");
	ASSERT_ERR(1, "discovery: chap: secret must be");
	expect_bad("discovery = {\n  chap = { user = \"d\"; }; };\n", NULL, NULL, NULL,
		   "discovery: chap: user and secret must be given together");
	ASSERT_ERR(2, "user and secret must be given together");
	expect_bad("discovery = { chop = { }; };\n", NULL, NULL, NULL,
		   "discovery: unknown key 'chop' (did you mean 'chap'?)");
	expect_bad("discovery = ( );\n", NULL, NULL, NULL, "discovery must be a group");
}
END_TEST


/* daemon.event_exec, event_exec_timeout, metrics and its limits, smartctl,
 * health_interval, health_fail: defaults, relative paths resolved, bad
 * values reported (with their line). */
START_TEST(t32_alert_keys)
{
	struct conf *c;
	char want[256];

	c = expect_good(NULL, NULL, NULL, NULL);
	ck_assert_ptr_null(c->daemon.event_exec);
	ck_assert_uint_eq(c->daemon.event_exec_timeout_s, 10);
	ck_assert_ptr_null(c->daemon.metrics);
	ck_assert_uint_eq(c->daemon.metrics_max_connections, 64);
	ck_assert_uint_eq(c->daemon.metrics_max_per_address, 16);
	ck_assert_uint_eq(c->daemon.metrics_max_request, 8192);
	ck_assert_uint_eq(c->daemon.metrics_idle_timeout_s, 5);
	ck_assert_str_eq(c->daemon.smartctl, "/usr/sbin/smartctl");
	ck_assert_uint_eq(c->daemon.health_interval_s, 1800);
	ck_assert(!c->daemon.health_fail_spare);
	conf_free(c);
	c = expect_good("daemon = { event_exec = \"hooks/mail.sh\"; event_exec_timeout = 3;\n"
			"  metrics = \"127.0.0.1:9427\"; smartctl = \"/opt/smartctl\";\n"
			"  health_interval = 0; health_fail = \"spare\"; };\n", NULL, NULL, NULL);
	snprintf(want, sizeof(want), "%s/hooks/mail.sh", tmpdir);
	ck_assert_str_eq(c->daemon.event_exec, want);
	ck_assert_uint_eq(c->daemon.event_exec_timeout_s, 3);
	ck_assert_str_eq(c->daemon.metrics, "127.0.0.1:9427");
	ck_assert_str_eq(c->daemon.smartctl, "/opt/smartctl");
	ck_assert_uint_eq(c->daemon.health_interval_s, 0);
	ck_assert(c->daemon.health_fail_spare);
	conf_free(c);
	c = expect_good("daemon = { metrics = \"127.0.0.1:9427\"; metrics_max_connections = 200;\n"
			"  metrics_max_per_address = 200; metrics_max_request = 1024;\n"
			"  metrics_idle_timeout = 3600; };\n", NULL, NULL, NULL);
	ck_assert_uint_eq(c->daemon.metrics_max_connections, 200);
	ck_assert_uint_eq(c->daemon.metrics_max_per_address, 200);
	ck_assert_uint_eq(c->daemon.metrics_max_request, 1024);
	ck_assert_uint_eq(c->daemon.metrics_idle_timeout_s, 3600);
	conf_free(c);
	expect_bad("daemon = { metrics = \"9427\"; };\n", NULL, NULL, NULL,
		   "daemon: metrics \"9427\" must be");
	expect_bad("daemon = {\n  metrics_max_connections = 0; };\n", NULL, NULL, NULL,
		   ":2: daemon: metrics_max_connections");
	expect_bad("daemon = { metrics_max_connections = 1025; };\n", NULL, NULL, NULL,
		   "metrics_max_connections");
	expect_bad("daemon = { metrics_max_request = 1023; };\n", NULL, NULL, NULL,
		   "metrics_max_request");
	expect_bad("daemon = { metrics_idle_timeout = 0; };\n", NULL, NULL, NULL,
		   "metrics_idle_timeout");
	expect_bad("daemon = { metrics_max_per_address = 0; };\n", NULL, NULL, NULL,
		   "metrics_max_per_address");
	expect_bad("daemon = { metrics_max_connections = 8;\n  metrics_max_per_address = 9; };\n",
		   NULL, NULL, NULL,
		   ":2: daemon: metrics_max_per_address (9) is above metrics_max_connections (8)");
	expect_bad("daemon = { metrics_max_connections = 8; };\n", NULL, NULL, NULL,
		   "metrics_max_per_address (16) is above metrics_max_connections (8)");
	expect_bad("daemon = { health_fail = \"eject\"; };\n", NULL, NULL, NULL,
		   "health_fail \"eject\" is not one of report, spare");
	expect_bad("daemon = { event_exec_timeout = 0; };\n", NULL, NULL, NULL, "event_exec_timeout");
	expect_bad("daemon = { event_exec = \"\"; };\n", NULL, NULL, NULL,
		   "event_exec must not be empty");
	expect_bad("daemon = { smartctl = 1; };\n", NULL, NULL, NULL, "smartctl");
	expect_bad("daemon = { event_exe = \"x\"; };\n", NULL, NULL, NULL, "event_exec");
}
END_TEST

START_TEST(t33_thin_luns)
{
	struct conf *c;

	c = expect_good(NULL, TWO_POOLS, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"ceph\"; volume = \"v\"; size = \"1G\"; thin = true; },\n"
			"           { lun = 1; pool = \"ceph\"; volume = \"w\"; size = \"1G\"; },\n"
			"           { lun = 2; pool = \"tank\"; volume = \"x\"; size = \"10%\"; thin = false; } ); } );\n");
	ck_assert(c->targets[0].luns[0].thin);
	ck_assert(!c->targets[0].luns[1].thin);
	ck_assert(!c->targets[0].luns[2].thin);
	conf_free(c);
	/* RAID pools have thin volumes too (raid/thin.c) */
	c = expect_good(NULL, TWO_POOLS, NULL,
			"targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
			"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v\"; size = \"10%\";\n"
			"    thin = true; } ); } );\n");
	ck_assert(c->targets[0].luns[0].thin);
	ck_assert_str_eq(c->targets[0].luns[0].pool, "tank");
	ck_assert_uint_eq(err_lines(), 0);
	conf_free(c);
	expect_bad(NULL, TWO_POOLS, NULL,
		   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
		   "  luns = ( { lun = 0; pool = \"ceph\"; volume = \"v\"; size = \"1G\"; thin = 1; } ); } );\n",
		   "thin");
}
END_TEST

/* the RAID pools' thin-provisioning soft threshold: default, range, type,
 * refused on an rbd pool */
START_TEST(t34_thin_threshold)
{
	struct conf *c;

	c = expect_good(NULL, TWO_POOLS, NULL, NULL);
	ck_assert_uint_eq(c->pools[0].thin_threshold, 80);
	ck_assert_uint_eq(c->pools[1].thin_threshold, 0);   /* rbd: not used */
	conf_free(c);
	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid5\";"
			" members = (\"d0\", \"d1\", \"d2\"); thin_threshold = 95; } );\n", NULL, NULL);
	ck_assert_uint_eq(c->pools[0].thin_threshold, 95);
	conf_free(c);
	c = expect_good(NULL, "pools = ( { name = \"tank\"; level = \"raid1\";"
			" members = (\"a\", \"b\"); thin_threshold = 1; },\n"
			"          { name = \"big\"; level = \"raid0\"; members = (\"c\");"
			" thin_threshold = 100; } );\n", NULL, NULL);
	ck_assert_uint_eq(c->pools[0].thin_threshold, 1);
	ck_assert_uint_eq(c->pools[1].thin_threshold, 100);
	conf_free(c);

	/* each refused at its own line */
	c = NULL;
	ck_assert_int_eq(load_parts(NULL,
				    "pools = ( { name = \"z\"; level = \"raid1\"; members = (\"a\", \"b\");\n"
				    "            thin_threshold = 0; },\n"                       /* 2 */
				    "          { name = \"o\"; level = \"raid1\"; members = (\"c\", \"d\");\n"
				    "            thin_threshold = 101; },\n"                     /* 4 */
				    "          { name = \"s\"; level = \"raid1\"; members = (\"e\", \"f\");\n"
				    "            thin_threshold = \"80\"; },\n"                  /* 6 */
				    "          { name = \"ceph\"; level = \"rbd\"; ceph_conf = \"x\"; rbd_pool = \"r\";\n"
				    "            thin_threshold = 80; } );\n",                  /* 8 */
				    NULL,
				    "targets = ( { iqn = \"iqn.2026-11.org.rtgt:a\"; portals = (\"p1\");\n"
				    "  luns = ( { lun = 0; pool = \"z\"; volume = \"v\"; size = \"10%\"; } ); } );\n",
				    &c), -EINVAL);
	ck_assert_ptr_null(c);
	ASSERT_ERR(2, "pool 'z': thin_threshold = 0 is out of range 1..100");
	ASSERT_ERR(4, "pool 'o': thin_threshold = 101 is out of range 1..100");
	ASSERT_ERR(6, "pool 's': thin_threshold must be an integer, not a string");
	ASSERT_ERR(8, "pool 'ceph': thin_threshold is not valid for an rbd pool: it applies to RAID pools");
	ck_assert_uint_eq(err_lines(), 4);
	/* a misspelling is caught like any unknown key */
	expect_bad(NULL, "pools = ( { name = \"tank\"; level = \"raid1\"; members = (\"a\", \"b\");"
		   " thin_treshold = 80; } );\n", NULL, NULL,
		   "unknown key 'thin_treshold' (did you mean 'thin_threshold'?)");
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_parse_sizes", t01_parse_sizes),
		CK_CASE("02_iscsi_names", t02_iscsi_names),
		CK_CASE("03_listen_addresses", t03_listen_addresses),
		CK_CASE("04_path_resolve", t04_path_resolve),
		CK_CASE("05_examples_load", t05_examples_load),
		CK_CASE("06_defaults", t06_defaults),
		CK_CASE("07_unknown_keys", t07_unknown_keys),
		CK_CASE("08_wrong_types", t08_wrong_types),
		CK_CASE("09_syntax_error_and_io", t09_syntax_error_and_io),
		CK_CASE("10_levels_and_member_counts", t10_levels_and_member_counts),
		CK_CASE("11_chunk_and_sizes", t11_chunk_and_sizes),
		CK_CASE("12_member_paths_unique", t12_member_paths_unique),
		CK_CASE("13_portals", t13_portals),
		CK_CASE("14_targets", t14_targets),
		CK_CASE("15_shared_volumes_and_percentages", t15_shared_volumes_and_percentages),
		CK_CASE("16_allow", t16_allow),
		CK_CASE("17_chap", t17_chap),
		CK_CASE("18_rbd_pools", t18_rbd_pools),
		CK_CASE("19_hdd_model", t19_hdd_model),
		CK_CASE("20_daemon_limits", t20_daemon_limits),
		CK_CASE("21_every_problem_reported", t21_every_problem_reported),
		CK_CASE("22_touches_nothing_on_disk", t22_touches_nothing_on_disk),
		CK_CASE("23_log_lines", t23_log_lines),
		CK_CASE("24_start_degraded", t24_start_degraded),
		CK_CASE("25_portal_tpgt", t25_portal_tpgt),
		CK_CASE("26_peer_portal_groups", t26_peer_portal_groups),
		CK_CASE("27_two_node_examples", t27_two_node_examples),
		CK_CASE("28_per_initiator_chap", t28_per_initiator_chap),
		CK_CASE("29_initiator_groups_and_mapping", t29_initiator_groups_and_mapping),
		CK_CASE("30_address_rules", t30_address_rules),
		CK_CASE("31_discovery_chap", t31_discovery_chap),
		CK_CASE("32_alert_keys", t32_alert_keys),
		CK_CASE("33_thin_luns", t33_thin_luns),
		CK_CASE("34_thin_threshold", t34_thin_threshold),
	};

	/* unchecked: runs in the parent, so the temp dir goes even when a test
	 * fails (one test per case, so once per test) */
	return ck_main(&(struct ck_suite_def){ "conf", CK_CASES(cases),
		.usetup = setup, .uteardown = teardown });
}

/*
 * tests/unit/test_conf_keys.c - conf/conf_keys.c, the table of every
 * configuration key: the table is well formed, a file that uses every key
 * of the table loads (so the table names nothing the parser rejects), a
 * key outside the table is rejected in every section (so the parser
 * accepts nothing the table lacks), and the integer ranges and daemon
 * defaults the parser applies are the table's.
 */
#include <check.h>
#include <errno.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_int.h"
#include "tests/lib/ckmain.h"

static char tmpdir[64];
static char cfgpath[128];
static char *errbuf;
static size_t errlen;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rtgt-test-keys-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(cfgpath, sizeof(cfgpath), "%s/t.conf", tmpdir);
	errbuf = NULL;
}

static void teardown(void)
{
	unlink(cfgpath);
	rmdir(tmpdir);
	free(errbuf);
	errbuf = NULL;
}

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

/*
 * A valid file that uses every key of the table, with one marker per
 * section where a test adds a line: @D@ daemon, @P@ the raid pool, @R@ the
 * rbd pool, @H@ hdd, @O@ portal, @G@ initiator group, @I@ discovery, @C@ a
 * chap group, @T@ target, @L@ LUN, @M@ LUN mapping, @A@ allow entry, @X@
 * top level.
 */
static const char every_key[] =
	"daemon = { workers = 1; control = \"x.sock\"; log_level = \"info\"; max_sessions = 8;\n"
	"  max_connections = 16; login_timeout = 15; nop_interval = 10; nop_timeout = 30;\n"
	"  queue_depth = 64; state_dir = \"state\"; max_discovery_sessions = 4;\n"
	"  discovery_idle_timeout = 30; event_exec = \"hook.sh\"; event_exec_timeout = 10;\n"
	"  metrics = \"127.0.0.1:9100\"; metrics_max_connections = 32; metrics_max_per_address = 8;\n"
	"  metrics_max_request = 4096; metrics_idle_timeout = 3;\n"
	"  smartctl = \"smartctl\"; health_interval = 60;\n"
	"  health_fail = \"spare\"; @D@ };\n"
	"pools = ( { name = \"tank\"; level = \"raid1\"; chunk = \"64K\"; members = ( \"d0\", \"d1\" );\n"
	"    spares = ( \"s0\" ); create_size = \"8M\"; direct_io = false; rebuild_mbps = 100;\n"
	"    start_degraded = false; thin_threshold = 75;\n"
	"    hdd = { mbps = 100; avg_seek_ms = 8.5; rpm = 7200; write_cache = true; @H@ }; @P@ },\n"
	"  { name = \"ceph\"; level = \"rbd\"; ceph_conf = \"ceph.conf\"; rbd_pool = \"rbd\";\n"
	"    ceph_id = \"admin\"; keyring = \"keyring\"; thick = true; provision_mbps = 0; @R@ } );\n"
	"portals = ( { name = \"lo\"; listen = \"127.0.0.1:3260\"; tpgt = 1; @O@ } );\n"
	"initiator_groups = ( { name = \"g\"; members = ( \"iqn.1993-08.org.debian:01:aaa\" ); @G@ } );\n"
	"discovery = { chap = { user = \"d\"; secret = \"discovery-sec\"; @C@ }; @I@ };\n"
	"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; alias = \"t\"; portals = ( \"lo\" );\n"
	"  peer_portal_groups = ( 2 );\n"
	"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v0\"; size = \"10%\"; read_only = false;\n"
	"    thin = false; groups = ( { group = \"g\"; lun = 3; read_only = true; @M@ } ); @L@ } );\n"
	"  allow = ( { initiator = \"iqn.1993-08.org.debian:01:aaa\"; address = \"10.0.0.0/8\";\n"
	"    chap = { user = \"a\"; secret = \"secret-of-a1\"; mutual_user = \"m\";\n"
	"             mutual_secret = \"mutual-of-a1\"; }; @A@ } );\n"
	"  chap = { user = \"t\"; secret = \"target-secret\"; }; @T@ } );\n"
	"@X@\n";

/* The marker of each section, in enum conf_sect order (the rbd pool's @R@
 * is a pool section too, used by 05). */
static const char *const marker[CONF_S__N] = {
	[CONF_S_TOP] = "@X@", [CONF_S_DAEMON] = "@D@", [CONF_S_POOL] = "@P@",
	[CONF_S_HDD] = "@H@", [CONF_S_PORTAL] = "@O@", [CONF_S_GROUP] = "@G@",
	[CONF_S_DISCOVERY] = "@I@", [CONF_S_TARGET] = "@T@", [CONF_S_LUN] = "@L@",
	[CONF_S_MAP] = "@M@", [CONF_S_ALLOW] = "@A@", [CONF_S_CHAP] = "@C@",
};

/* every_key with @line at the marker @at, every other marker dropped.
 * Returns a malloc'd string. */
static char *with_line(const char *at, const char *line)
{
	size_t cap = sizeof(every_key) + (line ? strlen(line) : 0) + 1;
	char *out = malloc(cap);
	const char *p = every_key;
	size_t n = 0;

	ck_assert_ptr_nonnull(out);
	while (*p) {
		if (p[0] == '@' && p[1] && p[2] == '@') {
			if (at && line && strncmp(p, at, 3) == 0) {
				memcpy(out + n, line, strlen(line));
				n += strlen(line);
			}
			p += 3;
			continue;
		}
		out[n++] = *p++;
	}
	out[n] = '\0';
	return out;
}

START_TEST(t01_table_well_formed)
{
	for (unsigned i = 0; i < CK__N; i++) {
		const struct conf_key *k = &conf_keys[i];

		ck_assert_msg(k->name && k->desc, "table entry %u has no name or description", i);
		ck_assert_msg((unsigned)k->sect < CONF_S__N, "%s: bad section", k->name);
		ck_assert_msg(!strpbrk(k->desc, "\t\n") && (!k->range || !strpbrk(k->range, "\t\n")) &&
			      (!k->def || !strpbrk(k->def, "\t\n")),
			      "%s: a tab or newline would break --list-keys", k->name);
		for (unsigned j = 0; j < i; j++)
			ck_assert_msg(conf_keys[j].sect != k->sect || strcmp(conf_keys[j].name, k->name),
				      "%s listed twice in section %s", k->name,
				      conf_sects[k->sect].path);
		if (k->type == CONF_T_INT) {
			ck_assert_msg(k->min <= k->max, "%s: empty range", k->name);
			ck_assert_msg(k->def || (k->idef >= k->min && k->idef <= k->max),
				      "%s: default %lld outside %lld..%lld", k->name, k->idef,
				      k->min, k->max);
		}
		/* a group or list of keys says what reload does per key */
		if (k->reload == CONF_RELOAD_KEYS)
			ck_assert_msg(k->type == CONF_T_GROUP || k->type == CONF_T_GROUPS,
				      "%s: 'per key' on a plain value", k->name);
	}
	for (unsigned s = 0; s < CONF_S__N; s++)
		ck_assert_msg(conf_sects[s].path && conf_sects[s].where, "section %u unnamed", s);
}
END_TEST

/* Marks in @seen every table key found under group @g of section @sect,
 * walking into the groups and lists the table says hold keys. */
static void walk(const config_setting_t *g, enum conf_sect sect, bool *seen)
{
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);
		int sub = -1;

		if (!name)
			continue;
		for (unsigned k = 0; k < CK__N; k++)
			if (conf_keys[k].sect == sect && !strcmp(conf_keys[k].name, name))
				seen[k] = true;
		if (!strcmp(name, "chap"))
			sub = CONF_S_CHAP;
		else if (sect == CONF_S_TOP && !strcmp(name, "daemon"))
			sub = CONF_S_DAEMON;
		else if (sect == CONF_S_TOP && !strcmp(name, "discovery"))
			sub = CONF_S_DISCOVERY;
		else if (sect == CONF_S_POOL && !strcmp(name, "hdd"))
			sub = CONF_S_HDD;
		if (sub >= 0) {
			walk(s, (enum conf_sect)sub, seen);
			continue;
		}
		if (!strcmp(name, "pools") && sect == CONF_S_TOP)
			sub = CONF_S_POOL;
		else if (!strcmp(name, "portals") && sect == CONF_S_TOP)
			sub = CONF_S_PORTAL;
		else if (!strcmp(name, "targets"))
			sub = CONF_S_TARGET;
		else if (!strcmp(name, "initiator_groups"))
			sub = CONF_S_GROUP;
		else if (!strcmp(name, "luns"))
			sub = CONF_S_LUN;
		else if (!strcmp(name, "groups") && sect == CONF_S_LUN)
			sub = CONF_S_MAP;
		else if (!strcmp(name, "allow"))
			sub = CONF_S_ALLOW;
		if (sub < 0)
			continue;
		/* a list: its group entries hold the keys, strings are values */
		for (int e = 0; e < config_setting_length(s); e++) {
			const config_setting_t *eg = config_setting_get_elem(s, (unsigned)e);

			if (config_setting_type(eg) == CONFIG_TYPE_GROUP)
				walk(eg, (enum conf_sect)sub, seen);
		}
	}
}

START_TEST(t02_every_key_loads)
{
	char *text = with_line(NULL, NULL);
	bool seen[CK__N] = { false };
	struct conf *c = NULL;
	config_t cfg;
	int rc;

	rc = load(text, &c);
	ck_assert_msg(rc == 0, "the file with every key did not load (%d):\n%s", rc, errbuf);
	conf_free(c);
	config_init(&cfg);
	ck_assert(config_read_string(&cfg, text) == CONFIG_TRUE);
	walk(config_root_setting(&cfg), CONF_S_TOP, seen);
	config_destroy(&cfg);
	for (unsigned k = 0; k < CK__N; k++)
		ck_assert_msg(seen[k], "the test file lacks %s key '%s': add it",
			      conf_sects[conf_keys[k].sect].path, conf_keys[k].name);
	free(text);
}
END_TEST

START_TEST(t03_unknown_key_in_every_section)
{
	for (unsigned s = 0; s < CONF_S__N; s++) {
		char *text = with_line(marker[s], "zz_not_a_key = 1;");
		struct conf *c = NULL;

		ck_assert_int_eq(load(text, &c), -EINVAL);
		ck_assert_msg(strstr(errbuf, "unknown key 'zz_not_a_key'"),
			      "section %s: no unknown-key report:\n%s", conf_sects[s].path, errbuf);
		free(text);
	}
}
END_TEST

/* Every integer key rejects min - 1 and max + 1, with the table's range in
 * the message. */
START_TEST(t04_ranges_are_the_tables)
{
	for (unsigned i = 0; i < CK__N; i++) {
		const struct conf_key *k = &conf_keys[i];
		const long long bad[2] = { k->min - 1, k->max + 1 };

		if (k->type != CONF_T_INT)
			continue;
		for (unsigned b = 0; b < 2; b++) {
			char line[96], want[160], *text;
			struct conf *c = NULL;

			/* the test file sets most keys already: the later
			 * setting of a name is a libconfig duplicate, so the
			 * key goes into a fresh copy of its group instead */
			snprintf(line, sizeof(line), "%s = %lld;", k->name, bad[b]);
			text = with_line(marker[k->sect], NULL);
			{
				/* replace the existing "name = value;" of the key's
				 * section in the text by the bad one */
				char key[80], *p, *end, *out;

				snprintf(key, sizeof(key), " %s = ", k->name);
				p = strstr(text, key);
				if (k->sect == CONF_S_MAP)
					p = strstr(strstr(text, "groups = ("), key);
				ck_assert_msg(p, "%s not in the test file", k->name);
				end = strchr(p, ';');
				ck_assert_ptr_nonnull(end);
				ck_assert(asprintf(&out, "%.*s %s%s", (int)(p - text), text, line,
						   end + 1) > 0);
				free(text);
				text = out;
			}
			snprintf(want, sizeof(want), "%s = %lld is out of range %lld..%lld", k->name,
				 bad[b], k->min, k->max);
			ck_assert_int_eq(load(text, &c), -EINVAL);
			ck_assert_msg(strstr(errbuf, want), "%s: no '%s' in:\n%s", k->name, want,
				      errbuf);
			free(text);
		}
	}
}
END_TEST

START_TEST(t05_defaults_are_the_tables)
{
	static const char minimal[] =
		"daemon = { workers = 1; };\n"
		"pools = ( { name = \"tank\"; level = \"raid1\"; members = ( \"d0\", \"d1\" ); } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:3260\"; } );\n"
		"targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = ( \"lo\" );\n"
		"  luns = ( { lun = 0; pool = \"tank\"; volume = \"v0\"; size = \"10%\"; } ); } );\n";
	const struct conf_daemon *d;
	struct conf *c = NULL;

	ck_assert_msg(load(minimal, &c) == 0, "%s", errbuf);
	d = &c->daemon;
	ck_assert_uint_eq(d->max_sessions, conf_keys[CK_D_MAX_SESSIONS].idef);
	ck_assert_uint_eq(d->max_connections, conf_keys[CK_D_MAX_CONNECTIONS].idef);
	ck_assert_uint_eq(d->login_timeout_s, conf_keys[CK_D_LOGIN_TIMEOUT].idef);
	ck_assert_uint_eq(d->nop_interval_s, conf_keys[CK_D_NOP_INTERVAL].idef);
	ck_assert_uint_eq(d->nop_timeout_s, conf_keys[CK_D_NOP_TIMEOUT].idef);
	ck_assert_uint_eq(d->queue_depth, conf_keys[CK_D_QUEUE_DEPTH].idef);
	ck_assert_uint_eq(d->max_discovery_sessions, conf_keys[CK_D_MAX_DISCOVERY_SESSIONS].idef);
	ck_assert_uint_eq(d->discovery_idle_timeout_s,
			  conf_keys[CK_D_DISCOVERY_IDLE_TIMEOUT].idef);
	ck_assert_uint_eq(d->event_exec_timeout_s, conf_keys[CK_D_EVENT_EXEC_TIMEOUT].idef);
	ck_assert_uint_eq(d->health_interval_s, conf_keys[CK_D_HEALTH_INTERVAL].idef);
	ck_assert_uint_eq(d->metrics_max_connections, conf_keys[CK_D_METRICS_MAX_CONNECTIONS].idef);
	ck_assert_uint_eq(d->metrics_max_per_address, conf_keys[CK_D_METRICS_MAX_PER_ADDRESS].idef);
	ck_assert_uint_eq(d->metrics_max_request, conf_keys[CK_D_METRICS_MAX_REQUEST].idef);
	ck_assert_uint_eq(d->metrics_idle_timeout_s, conf_keys[CK_D_METRICS_IDLE_TIMEOUT].idef);
	ck_assert_uint_eq(c->pools[0].thin_threshold, conf_keys[CK_P_THIN_THRESHOLD].idef);
	ck_assert_uint_eq(c->pools[0].rebuild_mbps, conf_keys[CK_P_REBUILD_MBPS].idef);
	/* the defaults in words: a size and booleans as the parser applies them */
	{
		struct conf_size sz;
		char num[32];

		snprintf(num, sizeof(num), "%s", conf_keys[CK_P_CHUNK].def + 1);
		num[strlen(num) - 1] = '\0';   /* "64K" without its quotes */
		ck_assert_int_eq(conf_parse_size(num, false, &sz), 0);
		ck_assert_uint_eq(c->pools[0].chunk, sz.bytes);
	}
	ck_assert_int_eq(c->pools[0].direct_io, !strcmp(conf_keys[CK_P_DIRECT_IO].def, "true"));
	ck_assert_int_eq(c->pools[0].start_degraded,
			 !strcmp(conf_keys[CK_P_START_DEGRADED].def, "true"));
	ck_assert_int_eq(c->targets[0].luns[0].read_only,
			 !strcmp(conf_keys[CK_L_READ_ONLY].def, "true"));
	ck_assert_int_eq(c->targets[0].luns[0].thin, !strcmp(conf_keys[CK_L_THIN].def, "true"));
	ck_assert_uint_eq(c->portals[0].tpgt, 1);   /* "position" */
	ck_assert_msg(c->targets[0].allow_all, "allow's default is ( \"ALL\" )");
	/* the string defaults the page shows are the ones applied */
	ck_assert_str_eq(conf_keys[CK_D_LOG_LEVEL].def, "\"info\"");
	ck_assert_int_eq(d->log_level, CONF_LOG_INFO);
	ck_assert_msg(strstr(d->smartctl, CONF_DEFAULT_SMARTCTL), "%s", d->smartctl);
	ck_assert_msg(strstr(conf_keys[CK_D_SMARTCTL].def, CONF_DEFAULT_SMARTCTL), "smartctl");
	ck_assert_msg(strstr(d->state_dir, CONF_DEFAULT_STATE_DIR), "%s", d->state_dir);
	ck_assert_msg(strstr(conf_keys[CK_D_STATE_DIR].def, CONF_DEFAULT_STATE_DIR), "state_dir");
	conf_free(c);

	/* an rbd pool's thick and an hdd group's write_cache */
	ck_assert_msg(load("pools = ( { name = \"c\"; level = \"rbd\"; ceph_conf = \"c.conf\";\n"
			   "  rbd_pool = \"rbd\"; },\n"
			   "  { name = \"h\"; level = \"raid0\"; members = ( \"d0\" );\n"
			   "    hdd = { mbps = 100; avg_seek_ms = 8; rpm = 7200; }; } );\n"
			   "portals = ( { name = \"lo\"; listen = \"127.0.0.1:3260\"; } );\n"
			   "targets = ( { iqn = \"iqn.2026-11.org.rtgt:t\"; portals = ( \"lo\" );\n"
			   "  luns = ( { lun = 0; pool = \"c\"; volume = \"v0\"; size = \"16M\"; } ); } );\n",
			   &c) == 0, "%s", errbuf);
	ck_assert_int_eq(c->pools[0].rbd_thick, !strcmp(conf_keys[CK_P_THICK].def, "true"));
	ck_assert_int_eq(!c->pools[1].hdd.write_through,
			 !strcmp(conf_keys[CK_H_WRITE_CACHE].def, "true"));
	ck_assert_uint_eq(c->pools[0].provision_mbps, conf_keys[CK_P_PROVISION_MBPS].idef);
	conf_free(c);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_table_well_formed", t01_table_well_formed),
		CK_CASE("02_every_key_loads", t02_every_key_loads),
		CK_CASE("03_unknown_key_in_every_section", t03_unknown_key_in_every_section),
		CK_CASE("04_ranges_are_the_tables", t04_ranges_are_the_tables),
		CK_CASE("05_defaults_are_the_tables", t05_defaults_are_the_tables),
	};

	return ck_main(&(struct ck_suite_def){ "conf_keys", CK_CASES(cases),
		.usetup = setup, .uteardown = teardown });
}

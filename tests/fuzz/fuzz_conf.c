/*
 * tests/fuzz/fuzz_conf.c - the configuration loader: the input is written
 * to a file in a mkdtemp directory and handed to conf_load(), which must
 * either refuse it (errors go to /dev/null) or return a configuration whose
 * cross references hold. The same bytes also go to conf_parse_size() as a
 * string.
 *
 * Properties: conf_load() returns 0 or a negative errno; on 0 every pool
 * has members and a power-of-two chunk >= 4 KiB, every LUN names a pool
 * conf_pool_find() finds, every target's portal index is in range and
 * conf_target_find() finds the target by its IQN, workers != 0; a size that
 * parses is either absolute or a percentage in 1..100.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "tests/fuzz/fuzz.h"

static char dir[64];
static char path[128];
static FILE *devnull;

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
	if (devnull)
		fclose(devnull);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	conf_log_set_level(CONF_LOG_ERROR);
	strcpy(dir, "/tmp/rtgt-fuzz-conf-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("fuzz_conf: mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/rtgt.conf", dir);
	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		perror("fuzz_conf: /dev/null");
		exit(1);
	}
	atexit(teardown);
	return 0;
}

static void check_conf(const struct conf *c)
{
	unsigned i, j;

	FUZZ_CHECK(c->daemon.workers != 0);
	FUZZ_CHECK(c->daemon.control != NULL);
	for (i = 0; i < c->n_pools; i++) {
		const struct conf_pool *p = &c->pools[i];

		FUZZ_CHECK(p->name && conf_pool_find(c, p->name) == p);
		if (p->level != CONF_RBD) {
			FUZZ_CHECK(p->n_members > 0 && p->members && p->member_paths);
			FUZZ_CHECK(p->chunk >= 4096 && (p->chunk & (p->chunk - 1)) == 0);
			for (j = 0; j < p->n_members; j++)
				FUZZ_CHECK(p->members[j] && p->member_paths[j]);
		}
		for (j = 0; j < p->n_spares; j++)
			FUZZ_CHECK(p->spares[j] && p->spare_paths[j]);
	}
	for (i = 0; i < c->n_portals; i++) {
		FUZZ_CHECK(c->portals[i].name && c->portals[i].host);
		FUZZ_CHECK(conf_portal_find(c, c->portals[i].name) == &c->portals[i]);
	}
	for (i = 0; i < c->n_targets; i++) {
		const struct conf_target *t = &c->targets[i];

		FUZZ_CHECK(t->iqn && conf_target_find(c, t->iqn) == t);
		for (j = 0; j < t->n_portals; j++)
			FUZZ_CHECK(t->portals[j] < c->n_portals);
		for (j = 0; j < t->n_luns; j++) {
			const struct conf_lun *l = &t->luns[j];

			FUZZ_CHECK(l->lun <= 255 && l->pool && l->volume);
			FUZZ_CHECK(conf_pool_find(c, l->pool) != NULL);
			FUZZ_CHECK(l->size.bytes != 0 ||
				   (l->size.percent >= 1 && l->size.percent <= 100));
		}
		FUZZ_CHECK(t->allow_all || t->n_allow == 0 || t->allow);
		FUZZ_CHECK(!t->chap.user || t->chap.secret);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf *c = NULL;
	struct conf_size sz;
	char *s;
	FILE *f;
	int rc;

	f = fopen(path, "w");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(data, 1, size, f) == size);
	FUZZ_CHECK(fclose(f) == 0);
	rc = conf_load(path, &c, devnull);
	FUZZ_CHECK(rc <= 0);
	if (rc == 0) {
		FUZZ_CHECK(c != NULL);
		check_conf(c);
		conf_free(c);
	}

	s = malloc(size + 1);
	FUZZ_CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&sz, 0, sizeof(sz));
	if (conf_parse_size(s, true, &sz) == 0)
		FUZZ_CHECK((sz.bytes != 0 && sz.percent == 0) ||
			   (sz.bytes == 0 && sz.percent >= 1 && sz.percent <= 100));
	free(s);
	return 0;
}

/*
 * conf/conf.c - the libconfig file turned into a validated struct conf:
 * conf_load(), the checks that span sections, and conf_free().
 *
 * conf_load() reads the whole file with libconfig, then walks it once,
 * section by section (daemon, pools, portals, initiator groups, discovery,
 * targets: conf_daemon.c, conf_pools.c, conf_access.c, conf_targets.c),
 * filling struct conf and reporting every problem it finds as
 * "FILE:LINE: message" rather than stopping at the first: an operator
 * fixing a file wants the whole list. Cross-references (target -> portal,
 * LUN -> pool, paths used twice, volume sizes) are checked after every
 * section has been read. The struct is only handed out when no error was
 * reported; otherwise it is freed and -EINVAL returned. Nothing on disk is
 * created, opened or stat'ed besides the file itself: whether a member
 * exists is the raid layer's business at start-up.
 *
 * There is no state machine here: one pass, one result.
 *
 * Layer: configuration, the top of conf/ (conf/README.md "Layers").
 * May call: conf_targets.c, the sections (conf_daemon.c, conf_pools.c,
 * conf_access.c), conf_val.c, the key table (conf_keys.c), libconfig, libc.
 */
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

#define CONF_POOL_MAX_VOLUMES 64  /* raid_pool_info.volumes[] */

/* ---- checks across sections ---- */

static void size_str(const struct conf_size *s, char *buf, size_t len)
{
	if (s->percent)
		snprintf(buf, len, "%u%%", s->percent);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)s->bytes);
}

/* One volume may back several LUNs (even of different targets): it is the
 * same storage, so the sizes must agree. Percentages of one pool must fit. */
static void check_volumes(struct conf_vctx *v)
{
	struct conf *c = v->c;

	for (unsigned pi = 0; pi < c->n_pools; pi++) {
		const struct conf_pool *p = &c->pools[pi];
		unsigned pct = 0, nvol = 0;
		bool over_reported = false;

		if (!p->name || conf_pool_find(c, p->name) != p)
			continue; /* a duplicate name, reported already */
		for (unsigned ti = 0; ti < c->n_targets; ti++) {
			const struct conf_target *t = &c->targets[ti];

			for (unsigned li = 0; li < t->n_luns; li++) {
				const struct conf_lun *l = &t->luns[li];
				const struct conf_lun *first = NULL;

				if (!l->pool || !l->volume || strcmp(l->pool, p->name))
					continue;
				/* find the first earlier LUN on the same volume */
				for (unsigned tj = 0; tj <= ti && !first; tj++) {
					const struct conf_target *u = &c->targets[tj];
					unsigned end = tj == ti ? li : u->n_luns;

					for (unsigned lj = 0; lj < end; lj++) {
						const struct conf_lun *o = &u->luns[lj];

						if (o->pool && o->volume &&
						    !strcmp(o->pool, l->pool) &&
						    !strcmp(o->volume, l->volume)) {
							first = o;
							break;
						}
					}
				}
				if (first) {
					char a[32], b[32];

					if (first->size.bytes == l->size.bytes &&
					    first->size.percent == l->size.percent)
						continue;
					size_str(&l->size, a, sizeof(a));
					size_str(&first->size, b, sizeof(b));
					fprintf(v->errs,
						"%s:%d: volume '%s/%s' has size %s here but "
						"%s at line %d: it is one volume, the sizes must "
						"match\n", v->path, l->line, l->pool, l->volume, a,
						b, first->line);
					v->n_err++;
					continue;
				}
				nvol++;
				if (p->level == CONF_RBD && l->size.percent) {
					fprintf(v->errs, "%s:%d: volume '%s/%s': a percentage "
						"size needs a raid pool; rbd volumes need an "
						"absolute size\n", v->path, l->line, l->pool,
						l->volume);
					v->n_err++;
				}
				pct += l->size.percent;
				if (pct > 100 && !over_reported) {
					fprintf(v->errs,
						"%s:%d: pool '%s': percentage sizes of its "
						"volumes add up to more than 100%%\n", v->path,
						l->line, p->name);
					v->n_err++;
					over_reported = true;
				}
				if (nvol == CONF_POOL_MAX_VOLUMES + 1) {
					fprintf(v->errs, "%s:%d: pool '%s': more than %d volumes\n",
						v->path, l->line, p->name, CONF_POOL_MAX_VOLUMES);
					v->n_err++;
				}
			}
		}
	}
}

/* The control socket must not clobber a member file. */
static void check_control_path(struct conf_vctx *v, const config_setting_t *root)
{
	const char *ctl = v->c->daemon.control;

	if (!ctl)
		return;
	for (unsigned i = 0; i < v->c->n_pools; i++) {
		const struct conf_pool *p = &v->c->pools[i];

		for (unsigned k = 0; k < p->n_members + p->n_spares; k++) {
			const char *path = k < p->n_members ? p->member_paths[k]
							    : p->spare_paths[k - p->n_members];

			if (path && strcmp(path, ctl) == 0)
				conf_err_at(v, config_setting_get_member(root, "daemon"),
					    "daemon: control socket %s is also a member of pool '%s'",
					    ctl, p->name ? p->name : "?");
		}
	}
}

/* ---- entry points ---- */

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *abs;
	char cwd[PATH_MAX];

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return NULL;
	errno = 0;
	if (dir[0] == '/')
		abs = conf_path_resolve("", dir);
	else if (!getcwd(cwd, sizeof(cwd)))
		abs = NULL;
	else
		abs = conf_path_resolve(cwd, dir);
	free(dir);
	return abs;
}

int conf_load(const char *path, struct conf **out, FILE *errs)
{
	struct conf_vctx v = { .path = path, .errs = errs ? errs : stderr };
	const config_setting_t *root;
	config_t cfg;
	FILE *f;
	int ret;

	*out = NULL;
	/* libconfig folds every I/O problem into "file I/O error": open it
	 * ourselves first to report the real errno */
	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		fprintf(v.errs, "%s: cannot open configuration: %s\n", path, strerror(errno));
		return ret;
	}
	fclose(f);

	v.c = calloc(1, sizeof(*v.c));
	if (!v.c)
		return -ENOMEM;
	v.c->path = strdup(path);
	if (!v.c->path) {
		ret = -ENOMEM;
		goto free_conf;
	}
	v.c->dir = dir_of(path);
	if (!v.c->dir) {
		ret = errno ? -errno : -ENOMEM;
		fprintf(v.errs, "%s: cannot resolve the configuration's directory: %s\n", path,
			strerror(-ret));
		goto free_conf;
	}

	config_init(&cfg);
	config_set_include_dir(&cfg, v.c->dir);
	if (config_read_file(&cfg, path) != CONFIG_TRUE) {
		const char *file = config_error_file(&cfg);

		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO) {
			fprintf(v.errs, "%s: %s\n", file ? file : path, config_error_text(&cfg));
			ret = -EIO;
		} else {
			fprintf(v.errs, "%s:%d: syntax error: %s\n", file ? file : path,
				config_error_line(&cfg), config_error_text(&cfg));
			ret = -EINVAL;
		}
		goto destroy_cfg;
	}
	root = config_root_setting(&cfg);
	conf_check_keys(&v, root, "top level", CONF_S_TOP);
	conf_parse_daemon(&v, root);
	conf_parse_pools(&v, root);
	conf_parse_portals(&v, root);
	conf_parse_groups(&v, root);
	conf_parse_discovery(&v, root);
	conf_parse_targets(&v, root);
	conf_check_paths_unique(&v, root);
	check_volumes(&v);
	check_control_path(&v, root);

	if (v.nomem) {
		fprintf(v.errs, "%s: out of memory while loading the configuration\n", path);
		ret = -ENOMEM;
		goto destroy_cfg;
	}
	if (v.n_err) {
		ret = -EINVAL;
		goto destroy_cfg;
	}
	config_destroy(&cfg);
	*out = v.c;
	return 0;

destroy_cfg:
	config_destroy(&cfg);
free_conf:
	conf_free(v.c);
	return ret;
}

static void free_strv(char **v, unsigned n)
{
	if (!v)
		return;
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_pools; i++) {
		struct conf_pool *p = &c->pools[i];

		free(p->name);
		free_strv(p->members, p->n_members);
		free_strv(p->member_paths, p->n_members);
		free_strv(p->spares, p->n_spares);
		free_strv(p->spare_paths, p->n_spares);
		free(p->ceph_conf);
		free(p->rbd_pool);
		free(p->ceph_id);
		free(p->keyring);
	}
	free(c->pools);
	for (unsigned i = 0; i < c->n_portals; i++) {
		free(c->portals[i].name);
		free(c->portals[i].listen);
		free(c->portals[i].host);
	}
	free(c->portals);
	for (unsigned i = 0; i < c->n_targets; i++) {
		struct conf_target *t = &c->targets[i];

		free(t->iqn);
		free(t->alias);
		free(t->portals);
		free(t->peer_groups);
		for (unsigned j = 0; j < t->n_luns; j++) {
			free(t->luns[j].pool);
			free(t->luns[j].volume);
			free(t->luns[j].maps);
		}
		for (unsigned j = 0; j < t->n_addr_rules; j++) {
			free(t->addr_rules[j].initiator);
			free(t->addr_rules[j].nets);
		}
		free(t->addr_rules);
		free(t->luns);
		free_strv(t->allow, t->n_allow);
		free(t->chap.user);
		free(t->chap.secret);
		free(t->chap.mutual_user);
		free(t->chap.mutual_secret);
		for (unsigned j = 0; j < t->n_acls; j++) {
			free(t->acls[j].initiator);
			free(t->acls[j].chap.user);
			free(t->acls[j].chap.secret);
			free(t->acls[j].chap.mutual_user);
			free(t->acls[j].chap.mutual_secret);
		}
		free(t->acls);
	}
	free(c->targets);
	for (unsigned i = 0; i < c->n_groups; i++) {
		free(c->groups[i].name);
		free_strv(c->groups[i].members, c->groups[i].n_members);
	}
	free(c->groups);
	free(c->discovery_chap.user);
	free(c->discovery_chap.secret);
	free(c->discovery_chap.mutual_user);
	free(c->discovery_chap.mutual_secret);
	free(c->daemon.control);
	free(c->daemon.state_dir);
	free(c->daemon.event_exec);
	free(c->daemon.metrics);
	free(c->daemon.smartctl);
	free(c->path);
	free(c->dir);
	free(c);
}

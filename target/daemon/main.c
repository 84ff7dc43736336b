/*
 * target/daemon/main.c - rtgtd: loads the configuration, assembles pools,
 * opens volumes, builds SCSI targets, starts one reactor per worker, the
 * iSCSI portals and the control socket; stops cleanly on SIGTERM/SIGINT.
 *
 * Daemon life:
 *   LOADING  --conf_load() ok-->               ASSEMBLING
 *   LOADING  --bad file-->                     exit 2
 *   ASSEMBLING --pools, volumes, portals ok--> SERVING   (reactors run)
 *   ASSEMBLING --any failure-->                exit 1 (what was opened is closed)
 *   SERVING  --SIGTERM/SIGINT-->               DRAINING  (iscsi_server_shutdown)
 *   DRAINING --every command answered-->       STOPPED   (reactors stopped,
 *                                              pools flushed and closed) -> exit 0
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "net/net.h"
#include "raid/raid.h"
#include "target/daemon/ctl.h"
#include "target/iscsi/iscsi.h"
#include "target/scsi/scsi.h"

#define MOD "rtgtd"

/* One exported volume; a volume exported by two LUNs is one entry. */
struct lu_ent {
	const struct conf_lun *cl;   /* first LUN that named it (borrowed from conf) */
	unsigned pool;               /* index in conf->pools */
	struct raid_vol *vol;        /* owned by its pool */
	struct scsi_lu *lu;          /* owned */
	char *pr_path;               /* owned */
};

struct worker {
	unsigned id;
	struct ev_loop *loop;        /* owned */
	struct raid_ioctx *ioctx;    /* owned */
	pthread_t thread;            /* valid when started, id != 0 */
	int started;
};

struct daemon {
	struct conf *conf;               /* owned */
	struct raid_pool **pools;        /* owned, n = conf->n_pools, NULL for rbd */
	struct lu_ent *lus;              /* owned */
	unsigned n_lus;
	struct scsi_target **targets;    /* owned, n = conf->n_targets */
	struct worker *workers;          /* owned, n = conf->daemon.workers */
	unsigned n_workers;
	struct iscsi_server *server;     /* owned, NULL until created */
	struct iscsi_ctl *ctl;           /* owned, NULL when not started */
	int sigfd;
	int stopping;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rtgtd -c FILE [--check]\n"
		"  -c, --config FILE  configuration file (default /etc/rtgt/rtgt.conf)\n"
		"      --check        validate the configuration and exit (0 valid, 2 not)\n"
		"  -h, --help         this text\n"
		"Runs in the foreground, logs to stderr, stops on SIGTERM or SIGINT.\n");
}

/* ---- assembly ---- */

static int open_pools(struct daemon *d)
{
	const struct conf *c = d->conf;
	int rc, bad = 0;

	d->pools = calloc(c->n_pools ? c->n_pools : 1, sizeof(*d->pools));
	if (!d->pools)
		return -ENOMEM;
	for (unsigned i = 0; i < c->n_pools; i++) {
		rc = raid_pool_open(&c->pools[i], &d->pools[i]);
		if (rc) {
			LOG_ERR(MOD, "pool %s: cannot assemble: %s", c->pools[i].name,
				strerror(-rc));
			bad = 1;
		}
	}
	return bad ? -EIO : 0;
}

static unsigned pool_index(const struct conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_pools; i++)
		if (!strcmp(c->pools[i].name, name))
			return i;
	return c->n_pools;
}

static struct lu_ent *find_lu(struct daemon *d, unsigned pool, const char *volume)
{
	for (unsigned i = 0; i < d->n_lus; i++)
		if (d->lus[i].pool == pool && !strcmp(d->lus[i].cl->volume, volume))
			return &d->lus[i];
	return NULL;
}

static char *state_dir(const struct conf *c)
{
	char *copy = strdup(c->daemon.control), *dir;

	if (!copy)
		return NULL;
	dir = strdup(dirname(copy));
	free(copy);
	return dir;
}

static int open_volumes(struct daemon *d)
{
	const struct conf *c = d->conf;
	unsigned max = 0;
	char *sdir;
	int rc = 0;

	for (unsigned t = 0; t < c->n_targets; t++)
		max += c->targets[t].n_luns;
	d->lus = calloc(max ? max : 1, sizeof(*d->lus));
	sdir = state_dir(c);
	if (!d->lus || !sdir) {
		free(sdir);
		return -ENOMEM;
	}
	for (unsigned t = 0; t < c->n_targets && !rc; t++) {
		for (unsigned l = 0; l < c->targets[t].n_luns && !rc; l++) {
			const struct conf_lun *cl = &c->targets[t].luns[l];
			unsigned p = pool_index(c, cl->pool);
			struct lu_ent *e;
			struct scsi_lu_params lp;
			char name[160];

			if (p >= c->n_pools || !d->pools[p]) {
				rc = -ENOENT;
				break;
			}
			if (find_lu(d, p, cl->volume))
				continue;
			e = &d->lus[d->n_lus];
			e->cl = cl;
			e->pool = p;
			rc = raid_vol_open(d->pools[p], cl->volume, &cl->size, &e->vol);
			if (rc) {
				LOG_ERR(MOD, "%s:%d: volume %s/%s: %s", c->path, cl->line, cl->pool,
					cl->volume, strerror(-rc));
				break;
			}
			if (asprintf(&e->pr_path, "%s/%s.%s.pr", sdir, cl->pool, cl->volume) < 0) {
				e->pr_path = NULL;
				rc = -ENOMEM;
				break;
			}
			snprintf(name, sizeof(name), "%s/%s", cl->pool, cl->volume);
			memset(&lp, 0, sizeof(lp));
			lp.vol = e->vol;
			lp.name = name;
			lp.pr_path = e->pr_path;
			/* VPD B1 reports a rotating medium only for the HDD model */
			lp.hdd_rpm = c->pools[p].hdd.enabled ? c->pools[p].hdd.rpm : 0;
			rc = scsi_lu_create(&lp, &e->lu);
			if (rc) {
				LOG_ERR(MOD, "volume %s: %s", name, strerror(-rc));
				free(e->pr_path);
				break;
			}
			d->n_lus++;
		}
	}
	free(sdir);
	return rc;
}

static int build_targets(struct daemon *d)
{
	const struct conf *c = d->conf;
	int rc;

	d->targets = calloc(c->n_targets ? c->n_targets : 1, sizeof(*d->targets));
	if (!d->targets)
		return -ENOMEM;
	for (unsigned t = 0; t < c->n_targets; t++) {
		const struct conf_target *ct = &c->targets[t];

		rc = scsi_target_create(ct->iqn, &d->targets[t]);
		if (rc)
			return rc;
		for (unsigned l = 0; l < ct->n_luns; l++) {
			struct lu_ent *e = find_lu(d, pool_index(c, ct->luns[l].pool),
						   ct->luns[l].volume);

			rc = e ? scsi_target_add_lu(d->targets[t], ct->luns[l].lun, e->lu) : -ENOENT;
			if (rc)
				return rc;
		}
		for (unsigned p = 0; p < ct->n_portals; p++) {
			uint16_t tpgt = c->portals[ct->portals[p]].tpgt;

			rc = scsi_target_add_port(d->targets[t], tpgt, tpgt);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- workers ---- */

static void on_ioctx(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	raid_ioctx_run(arg);
}

static int create_workers(struct daemon *d)
{
	int rc;

	d->n_workers = d->conf->daemon.workers;
	d->workers = calloc(d->n_workers, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < d->n_workers; i++) {
		struct worker *w = &d->workers[i];

		w->id = i;
		rc = ev_loop_create(i, &w->loop);
		if (rc)
			return rc;
		rc = raid_ioctx_create(&w->ioctx);
		if (rc)
			return rc;
		rc = ev_io_add(w->loop, raid_ioctx_fd(w->ioctx), EV_READ, on_ioctx, w->ioctx);
		if (rc)
			return rc;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int rc = ev_run(w->loop);

	if (rc)
		LOG_ERR(MOD, "worker %u: reactor failed: %s", w->id, strerror(-rc));
	return NULL;
}

/* ---- control socket ---- */

static int status_json(struct daemon *d, struct json_object *reply)
{
	struct json_object *pools = json_object_new_array();
	struct json_object *targets = json_object_new_array();
	struct raid_pool_info *pi = malloc(sizeof(*pi));
	int rc = 0;

	if (!pools || !targets || !pi) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < d->conf->n_pools; i++) {
		struct json_object *p, *members, *vols;

		if (!d->pools[i] || raid_pool_info(d->pools[i], pi))
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "name", json_object_new_string(pi->name));
		json_object_object_add(p, "level", json_object_new_string(pi->level));
		json_object_object_add(p, "state", json_object_new_string(pi->state));
		json_object_object_add(p, "rebuild_progress",
				       json_object_new_double(pi->rebuild_progress));
		if (pi->rebuild_eta_s >= 0)
			json_object_object_add(p, "rebuild_eta_s",
					       json_object_new_double(pi->rebuild_eta_s));
		json_object_object_add(p, "usable_bytes", json_object_new_int64((int64_t)pi->usable_bytes));
		json_object_object_add(p, "chunk", json_object_new_int64((int64_t)pi->chunk));
		members = json_object_new_array();
		for (unsigned m = 0; m < pi->n_members; m++) {
			struct raid_member_info *mi = &pi->members[m];
			struct json_object *mo = json_object_new_object();

			json_object_object_add(mo, "path", json_object_new_string(mi->path));
			json_object_object_add(mo, "state", json_object_new_string(mi->state));
			json_object_object_add(mo, "read_bytes", json_object_new_int64((int64_t)mi->read_bytes));
			json_object_object_add(mo, "write_bytes", json_object_new_int64((int64_t)mi->write_bytes));
			json_object_object_add(mo, "read_ops", json_object_new_int64((int64_t)mi->read_ops));
			json_object_object_add(mo, "write_ops", json_object_new_int64((int64_t)mi->write_ops));
			json_object_array_add(members, mo);
		}
		json_object_object_add(p, "members", members);
		vols = json_object_new_array();
		for (unsigned v = 0; v < pi->n_volumes; v++) {
			struct json_object *vo = json_object_new_object();

			json_object_object_add(vo, "name", json_object_new_string(pi->volumes[v].name));
			json_object_object_add(vo, "bytes", json_object_new_int64((int64_t)pi->volumes[v].bytes));
			json_object_array_add(vols, vo);
		}
		json_object_object_add(p, "volumes", vols);
		if (pi->scrub_state) {
			json_object_object_add(p, "scrub_state", json_object_new_string(pi->scrub_state));
			json_object_object_add(p, "scrub_mismatches",
					       json_object_new_int64((int64_t)pi->scrub_mismatches));
		}
		json_object_array_add(pools, p);
	}
	rc = iscsi_server_status_json(d->server, targets);
out:
	free(pi);
	json_object_object_add(reply, "pools", pools);
	json_object_object_add(reply, "targets", targets);
	return rc;
}

static struct raid_pool *pool_by_name(struct daemon *d, const char *name)
{
	unsigned i = name ? pool_index(d->conf, name) : d->conf->n_pools;

	return i < d->conf->n_pools ? d->pools[i] : NULL;
}

static int ctl_handle(void *arg, const char *cmd, struct json_object *args,
		      struct json_object *reply, char *err, size_t errlen)
{
	struct daemon *d = arg;
	const char *a0 = NULL, *a1 = NULL;
	struct raid_pool *p;
	int rc;

	if (args && json_object_is_type(args, json_type_array)) {
		if (json_object_array_length(args) > 0)
			a0 = json_object_get_string(json_object_array_get_idx(args, 0));
		if (json_object_array_length(args) > 1)
			a1 = json_object_get_string(json_object_array_get_idx(args, 1));
	}
	if (!strcmp(cmd, "status") || !strcmp(cmd, "stats") || !strcmp(cmd, "sessions"))
		return status_json(d, reply);
	if (!strcmp(cmd, "fail") || !strcmp(cmd, "add-spare") || !strcmp(cmd, "scrub")) {
		p = pool_by_name(d, a0);
		if (!p) {
			snprintf(err, errlen, "no pool named '%s'", a0 ? a0 : "");
			return -ENOENT;
		}
		if (!strcmp(cmd, "fail")) {
			if (!a1) {
				snprintf(err, errlen, "usage: fail POOL MEMBER");
				return -EINVAL;
			}
			rc = raid_pool_fail(p, a1);
		} else if (!strcmp(cmd, "add-spare")) {
			if (!a1) {
				snprintf(err, errlen, "usage: add-spare POOL PATH");
				return -EINVAL;
			}
			rc = raid_pool_add_spare(p, a1);
		} else {
			rc = raid_pool_scrub(p, a1 && !strcmp(a1, "--repair"));
		}
		if (rc)
			snprintf(err, errlen, "%s %s: %s", cmd, a0, strerror(-rc));
		return rc;
	}
	snprintf(err, errlen, "unknown command '%s'", cmd);
	return -EINVAL;
}

/* ---- signals and shutdown ---- */

static void stop_all(void *arg)
{
	struct daemon *d = arg;

	for (unsigned i = 0; i < d->n_workers; i++)
		ev_loop_stop(d->workers[i].loop);
}

static void on_signal(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	struct daemon *d = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		LOG_WARN(MOD, "SIGHUP: live reload is not supported yet; configuration unchanged");
		return;
	}
	if (d->stopping) {
		LOG_WARN(MOD, "signal %u again: still draining in-flight commands", si.ssi_signo);
		return;
	}
	d->stopping = 1;
	LOG_INFO(MOD, "signal %u: stopping: draining in-flight commands", si.ssi_signo);
	if (d->ctl) {
		iscsi_ctl_stop(d->ctl);
		d->ctl = NULL;
	}
	iscsi_server_shutdown(d->server, stop_all, d);
}

static void teardown(struct daemon *d)
{
	if (d->ctl)
		iscsi_ctl_stop(d->ctl);
	if (d->server)
		iscsi_server_destroy(d->server);
	if (d->targets)
		for (unsigned t = 0; t < d->conf->n_targets; t++)
			if (d->targets[t])
				scsi_target_destroy(d->targets[t]);
	for (unsigned i = 0; i < d->n_lus; i++) {
		scsi_lu_destroy(d->lus[i].lu);
		free(d->lus[i].pr_path);
	}
	if (d->pools)
		for (unsigned i = 0; i < d->conf->n_pools; i++)
			if (d->pools[i])
				raid_pool_close(d->pools[i]);
	if (d->workers)
		for (unsigned i = 0; i < d->n_workers; i++) {
			if (d->workers[i].ioctx)
				raid_ioctx_destroy(d->workers[i].ioctx);
			if (d->workers[i].loop)
				ev_loop_destroy(d->workers[i].loop);
		}
	free(d->workers);
	free(d->targets);
	free(d->lus);
	free(d->pools);
	if (d->sigfd >= 0)
		close(d->sigfd);
	conf_free(d->conf);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = "/etc/rtgt/rtgt.conf";
	struct daemon d = { .sigfd = -1 };
	struct iscsi_worker *iw = NULL;
	struct iscsi_ctl_ops ops = { .arg = &d, .handle = ctl_handle };
	int check = 0, opt, rc, status = 1;
	sigset_t mask;

	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'k':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	rc = conf_load(path, &d.conf, stderr);
	if (rc == -EINVAL)
		return 2;
	if (rc) {
		fprintf(stderr, "rtgtd: %s: %s\n", path, strerror(-rc));
		return check ? 2 : 1;
	}
	if (check) {
		conf_free(d.conf);
		return 0;
	}
	conf_log_set_level(d.conf->daemon.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* every thread inherits the mask; only the signalfd sees them */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);

	if (open_pools(&d) || open_volumes(&d) || build_targets(&d))
		goto out;
	rc = create_workers(&d);
	if (rc) {
		LOG_ERR(MOD, "cannot create reactors: %s", strerror(-rc));
		goto out;
	}
	iw = calloc(d.n_workers, sizeof(*iw));
	if (!iw)
		goto out;
	for (unsigned i = 0; i < d.n_workers; i++) {
		iw[i].loop = d.workers[i].loop;
		iw[i].ioctx = d.workers[i].ioctx;
	}
	rc = iscsi_server_create(d.conf, d.targets, iw, d.n_workers, &d.server);
	if (rc) {
		LOG_ERR(MOD, "cannot create the iSCSI server: %s", strerror(-rc));
		goto out;
	}
	if (iscsi_server_start(d.server))
		goto out;
	rc = iscsi_ctl_start(d.workers[0].loop, d.conf->daemon.control, &ops, &d.ctl);
	if (rc) {
		LOG_ERR(MOD, "control socket %s: %s", d.conf->daemon.control, strerror(-rc));
		goto out;
	}
	d.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d.sigfd < 0 || ev_io_add(d.workers[0].loop, d.sigfd, EV_READ, on_signal, &d)) {
		LOG_ERR(MOD, "cannot watch signals: %s", strerror(errno));
		goto out;
	}
	for (unsigned i = 1; i < d.n_workers; i++) {
		if (pthread_create(&d.workers[i].thread, NULL, worker_main, &d.workers[i])) {
			LOG_ERR(MOD, "cannot start worker %u", i);
			for (unsigned j = 1; j < i; j++)
				ev_loop_stop(d.workers[j].loop);
			for (unsigned j = 1; j < i; j++)
				pthread_join(d.workers[j].thread, NULL);
			goto out;
		}
		d.workers[i].started = 1;
	}
	LOG_INFO(MOD, "serving %u target(s) on %u portal(s) with %u worker(s)",
		 d.conf->n_targets, d.conf->n_portals, d.n_workers);
	worker_main(&d.workers[0]);
	for (unsigned i = 1; i < d.n_workers; i++)
		if (d.workers[i].started)
			pthread_join(d.workers[i].thread, NULL);
	status = 0;
	LOG_INFO(MOD, "stopped");
out:
	free(iw);
	teardown(&d);
	return status;
}

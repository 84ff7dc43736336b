/*
 * conf/conf_daemon.c - the "daemon" group: process settings, each with its
 * default, into struct conf_daemon.
 *
 * Every key is optional; what is absent keeps its default from the key
 * table (conf_keys.c, also what rtgt.conf(5) and conf/README.md show), and the paths (control socket, state
 * directory, event hook, smartctl) are resolved against the
 * configuration's directory. One pass, no state machine.
 *
 * Layer: sections (conf/README.md "Layers"). May call: conf_val.c, the key
 * table (conf_keys.c), the logger (log.c: conf_log_level_parse), libconfig, libc.
 */
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

/* ---- daemon ---- */

void conf_parse_daemon(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *g = config_setting_get_member(root, "daemon");
	struct conf_daemon *d = &v->c->daemon;
	const char *where = "daemon";
	const char *control = CONF_DEFAULT_CONTROL, *state = CONF_DEFAULT_STATE_DIR, *lvl;
	const char *exec = NULL, *metrics = NULL, *smartctl = CONF_DEFAULT_SMARTCTL, *hf;
	const config_setting_t *ms, *mc, *mm, *mp;
	unsigned long long u;

	/* the defaults are the table's, so rtgt.conf(5) states what applies */
	d->workers = (unsigned)conf_keys[CK_D_WORKERS].idef;
	d->log_level = CONF_LOG_INFO;
	d->max_sessions = (unsigned)conf_keys[CK_D_MAX_SESSIONS].idef;
	d->max_connections = (unsigned)conf_keys[CK_D_MAX_CONNECTIONS].idef;
	d->login_timeout_s = (unsigned)conf_keys[CK_D_LOGIN_TIMEOUT].idef;
	d->nop_interval_s = (unsigned)conf_keys[CK_D_NOP_INTERVAL].idef;
	d->nop_timeout_s = (unsigned)conf_keys[CK_D_NOP_TIMEOUT].idef;
	d->queue_depth = (unsigned)conf_keys[CK_D_QUEUE_DEPTH].idef;
	d->max_discovery_sessions = (unsigned)conf_keys[CK_D_MAX_DISCOVERY_SESSIONS].idef;
	d->discovery_idle_timeout_s = (unsigned)conf_keys[CK_D_DISCOVERY_IDLE_TIMEOUT].idef;
	d->event_exec_timeout_s = (unsigned)conf_keys[CK_D_EVENT_EXEC_TIMEOUT].idef;
	d->health_interval_s = (unsigned)conf_keys[CK_D_HEALTH_INTERVAL].idef;
	d->metrics_max_connections = (unsigned)conf_keys[CK_D_METRICS_MAX_CONNECTIONS].idef;
	d->metrics_max_per_address = (unsigned)conf_keys[CK_D_METRICS_MAX_PER_ADDRESS].idef;
	d->metrics_max_request = (unsigned)conf_keys[CK_D_METRICS_MAX_REQUEST].idef;
	d->metrics_idle_timeout_s = (unsigned)conf_keys[CK_D_METRICS_IDLE_TIMEOUT].idef;

	if (g && config_setting_type(g) != CONFIG_TYPE_GROUP) {
		conf_err_at(v, g, "daemon must be a group { ... }, not %s", conf_type_name(g));
		g = NULL;
	}
	if (g) {
		conf_check_keys(v, g, where, CONF_S_DAEMON);
		if (conf_get_key_uint(v, g, CK_D_WORKERS, where, &u) > 0)
			d->workers = (unsigned)u;
		if (conf_get_string(v, g, "control", where, false, &control) < 0)
			control = CONF_DEFAULT_CONTROL;
		if (conf_get_string(v, g, "state_dir", where, false, &state) < 0)
			state = CONF_DEFAULT_STATE_DIR;
		if (conf_get_string(v, g, "log_level", where, false, &lvl) > 0 &&
		    conf_log_level_parse(lvl, &d->log_level) < 0)
			conf_err_at(v, config_setting_get_member(g, "log_level"),
				    "daemon: log_level \"%s\" is not one of error, warn, info, debug",
				    lvl);
		if (conf_get_key_uint(v, g, CK_D_MAX_SESSIONS, where, &u) > 0)
			d->max_sessions = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_MAX_CONNECTIONS, where, &u) > 0)
			d->max_connections = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_LOGIN_TIMEOUT, where, &u) > 0)
			d->login_timeout_s = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_NOP_INTERVAL, where, &u) > 0)
			d->nop_interval_s = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_NOP_TIMEOUT, where, &u) > 0)
			d->nop_timeout_s = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_QUEUE_DEPTH, where, &u) > 0)
			d->queue_depth = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_MAX_DISCOVERY_SESSIONS, where, &u) > 0)
			d->max_discovery_sessions = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_DISCOVERY_IDLE_TIMEOUT, where, &u) > 0)
			d->discovery_idle_timeout_s = (unsigned)u;
		if (conf_get_string(v, g, "event_exec", where, false, &exec) <= 0)
			exec = NULL;   /* conf_get_string reported an empty or mistyped one */
		if (conf_get_key_uint(v, g, CK_D_EVENT_EXEC_TIMEOUT, where, &u) > 0)
			d->event_exec_timeout_s = (unsigned)u;
		if (conf_get_string(v, g, "metrics", where, false, &metrics) > 0) {
			char host[64];
			uint16_t port;
			int fam;
			const char *why;

			if (conf_listen_parse(metrics, host, &port, &fam, &why)) {
				conf_err_at(v, config_setting_get_member(g, "metrics"),
					    "daemon: metrics \"%s\" %s", metrics, why);
				metrics = NULL;
			}
		}
		if (conf_get_key_uint(v, g, CK_D_METRICS_MAX_CONNECTIONS, where, &u) > 0)
			d->metrics_max_connections = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_METRICS_MAX_PER_ADDRESS, where, &u) > 0)
			d->metrics_max_per_address = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_METRICS_MAX_REQUEST, where, &u) > 0)
			d->metrics_max_request = (unsigned)u;
		if (conf_get_key_uint(v, g, CK_D_METRICS_IDLE_TIMEOUT, where, &u) > 0)
			d->metrics_idle_timeout_s = (unsigned)u;
		mm = config_setting_get_member(g, "metrics_max_connections");
		mp = config_setting_get_member(g, "metrics_max_per_address");
		/* a per-address cap above the total would never apply: say so
		 * rather than leave the operator believing it does */
		if (d->metrics_max_per_address > d->metrics_max_connections)
			conf_err_at(v, mp ? mp : mm,
				    "daemon: metrics_max_per_address (%u) is above "
				    "metrics_max_connections (%u)",
				    d->metrics_max_per_address, d->metrics_max_connections);
		if (conf_get_string(v, g, "smartctl", where, false, &smartctl) <= 0)
			smartctl = CONF_DEFAULT_SMARTCTL;
		if (conf_get_key_uint(v, g, CK_D_HEALTH_INTERVAL, where, &u) > 0)
			d->health_interval_s = (unsigned)u;
		if (conf_get_string(v, g, "health_fail", where, false, &hf) > 0) {
			if (!strcmp(hf, "spare"))
				d->health_fail_spare = true;
			else if (strcmp(hf, "report"))
				conf_err_at(v, config_setting_get_member(g, "health_fail"),
					    "daemon: health_fail \"%s\" is not one of report, spare", hf);
		}
		ms = config_setting_get_member(g, "max_sessions");
		mc = config_setting_get_member(g, "max_connections");
		/* every session needs one connection: a smaller connection cap
		 * would silently lower the session cap */
		if (d->max_connections < d->max_sessions)
			conf_err_at(v, mc ? mc : ms,
				    "daemon: max_connections (%u) is below max_sessions (%u)",
				    d->max_connections, d->max_sessions);
	}
	if (d->workers == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		d->workers = n < 1 ? 1 : n > CONF_MAX_WORKERS ? CONF_MAX_WORKERS : (unsigned)n;
	}
	d->control = conf_path_resolve(v->c->dir, control);
	d->state_dir = conf_path_resolve(v->c->dir, state);
	d->smartctl = conf_path_resolve(v->c->dir, smartctl);
	d->event_exec = exec ? conf_path_resolve(v->c->dir, exec) : NULL;
	d->metrics = metrics ? strdup(metrics) : NULL;
	if (!d->control || !d->state_dir || !d->smartctl || (exec && !d->event_exec) ||
	    (metrics && !d->metrics)) {
		v->nomem = true;
		return;
	}
	if (strlen(d->control) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		conf_err_at(v, g ? config_setting_get_member(g, "control") : root,
			    "daemon: control socket path \"%s\" is %zu bytes, longer than a unix "
			    "socket allows (%zu)", d->control, strlen(d->control),
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
}

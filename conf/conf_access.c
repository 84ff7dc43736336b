/*
 * conf/conf_access.c - who may log in and with which credentials: CHAP
 * groups (a target's, an allow entry's, discovery's), the top-level
 * "initiator_groups" and "discovery", and a target's "allow" list with its
 * per-initiator CHAP entries and address rules; conf_group_of().
 *
 * Initiator names compare case-insensitively here as they do at login, so
 * that which entry or group applies to an initiator never depends on how
 * its name was capitalised or on the order of the list.
 *
 * Layer: sections (conf/README.md "Layers"). May call: conf_val.c, the
 * key table (conf_keys.c), the networks of address rules (net.c: conf_net_parse), libconfig, libc.
 */
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf.h"
#include "conf/conf_int.h"

/* ---- CHAP ---- */


void conf_parse_chap(struct conf_vctx *v, const config_setting_t *g, const char *twhere,
		     struct conf_chap *chap)
{
	const char *user = NULL, *secret = NULL, *muser = NULL, *msecret = NULL;
	char where[288];
	int ru, rs, rmu, rms;

	snprintf(where, sizeof(where), "%s: chap", twhere);
	if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
		conf_err_at(v, g, "%s must be a group { user = ..; secret = ..; }, not %s", where,
			    conf_type_name(g));
		return;
	}
	conf_check_keys(v, g, where, CONF_S_CHAP);
	ru = conf_get_string(v, g, "user", where, false, &user);
	rs = conf_get_string(v, g, "secret", where, false, &secret);
	rmu = conf_get_string(v, g, "mutual_user", where, false, &muser);
	rms = conf_get_string(v, g, "mutual_secret", where, false, &msecret);
	if ((ru == 0) != (rs == 0))
		conf_err_at(v, g, "%s: user and secret must be given together", where);
	if ((rmu == 0) != (rms == 0))
		conf_err_at(v, g, "%s: mutual_user and mutual_secret must be given together",
			    where);
	if (rmu != 0 && ru == 0)
		conf_err_at(v, g, "%s: mutual CHAP needs user and secret as well", where);
	if (rs > 0) {
		const config_setting_t *s = config_setting_get_member(g, "secret");
		size_t len = strlen(secret);

		if (len < CONF_CHAP_SECRET_MIN || len > CONF_CHAP_SECRET_MAX)
			conf_err_at(v, s, "%s: secret must be %d..%d characters, has %zu", where,
				    CONF_CHAP_SECRET_MIN, CONF_CHAP_SECRET_MAX, len);
		else if (len > CONF_CHAP_SECRET_MS_MAX)
			conf_warn_at(v, s, "%s: secret is %zu characters; the Microsoft iSCSI "
				     "initiator refuses secrets longer than 16", where, len);
	}
	if (rms > 0) {
		const config_setting_t *s = config_setting_get_member(g, "mutual_secret");
		size_t len = strlen(msecret);

		if (len < CONF_CHAP_SECRET_MIN || len > CONF_CHAP_SECRET_MAX)
			conf_err_at(v, s, "%s: mutual_secret must be %d..%d characters, has %zu",
				    where, CONF_CHAP_SECRET_MIN, CONF_CHAP_SECRET_MAX, len);
		else if (len > CONF_CHAP_SECRET_MS_MAX)
			conf_warn_at(v, s,
				     "%s: mutual_secret is %zu characters; the Microsoft iSCSI "
				     "initiator refuses secrets longer than 16", where, len);
		/* RFC 3720 8.2.1: the same secret both ways lets an attacker
		 * reflect the target's challenge back at it */
		if (rs > 0 && strcmp(secret, msecret) == 0)
			conf_err_at(v, s, "%s: mutual_secret must differ from secret", where);
	}
	if (ru > 0 && rs > 0) {
		chap->user = conf_xstrdup(v, user);
		chap->secret = conf_xstrdup(v, secret);
		if (rmu > 0 && rms > 0) {
			chap->mutual_user = conf_xstrdup(v, muser);
			chap->mutual_secret = conf_xstrdup(v, msecret);
		}
	}
}

/* ---- initiator groups and discovery ---- */


int conf_group_index(const struct conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_groups; i++)
		if (c->groups[i].name && strcmp(c->groups[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* The group (index < @upto) holding @name, or -1. */
static int member_group(const struct conf *c, unsigned upto, const char *name, int *line)
{
	for (unsigned g = 0; g < upto; g++)
		for (unsigned m = 0; m < c->groups[g].n_members; m++)
			if (strcasecmp(c->groups[g].members[m], name) == 0) {
				*line = c->groups[g].line;
				return (int)g;
			}
	return -1;
}

/* Top level "initiator_groups": ( { name = "g1"; members = ( "IQN", ... ); } ).
 * Parsed before the targets, whose LUN mappings refer to the names. */
void conf_parse_groups(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *l = config_setting_get_member(root, "initiator_groups");
	struct conf *c = v->c;
	int n;

	if (!l)
		return;
	if (config_setting_type(l) != CONFIG_TYPE_LIST) {
		conf_err_at(v, l,
			    "initiator_groups must be a list ( { name = ..; members = ( .. ); } ), "
			    "not %s", conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	c->groups = conf_xcalloc(v, (size_t)n, sizeof(*c->groups));
	if (!c->groups)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, (unsigned)i), *ml;
		struct conf_group *grp = &c->groups[c->n_groups];
		const char *name = NULL, *why;
		char where[96];
		bool bad = false;
		int nm;

		snprintf(where, sizeof(where), "initiator_groups[%d]", i);
		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			conf_err_at(v, g,
				    "%s must be a group { name = ..; members = ( .. ); }, not %s",
				    where, conf_type_name(g));
			continue;
		}
		conf_check_keys(v, g, where, CONF_S_GROUP);
		if (conf_get_string(v, g, "name", where, true, &name) <= 0)
			continue;
		snprintf(where, sizeof(where), "initiator group '%.63s'", name);
		if (conf_volume_name_check(name) < 0) {
			conf_err_at(v, config_setting_get_member(g, "name"),
				    "%s: name must be 1..%d characters of A-Z a-z 0-9 . _ -", where,
				    CONF_NAME_MAX);
			continue;
		}
		if (conf_group_index(c, name) >= 0) {
			conf_err_at(v, g, "%s: the name is already used at line %d", where,
				    c->groups[conf_group_index(c, name)].line);
			continue;
		}
		ml = conf_get_string_list(v, g, "members", where, &bad);
		if (!ml && !bad)
			conf_err_at(v, g, "%s: missing required list 'members'", where);
		grp->line = conf_setting_line(g);
		grp->name = conf_xstrdup(v, name);
		nm = ml ? config_setting_length(ml) : 0;
		if (ml && nm == 0)
			conf_warn_at(v, ml, "%s: members is empty", where);
		if (nm > 0)
			grp->members = conf_xcalloc(v, (size_t)nm, sizeof(char *));
		for (int k = 0; grp->members && k < nm; k++) {
			const config_setting_t *e = config_setting_get_elem(ml, (unsigned)k);
			const char *iqn = config_setting_get_string(e);
			int other, oline = 0;

			if (!iqn || !*iqn)
				continue;
			if (conf_iqn_check(iqn, &why) < 0) {
				conf_err_at(v, e, "%s: member \"%s\": initiator name %s", where,
					    iqn, why);
				continue;
			}
			for (unsigned m = 0; m < grp->n_members; m++)
				if (strcasecmp(grp->members[m], iqn) == 0) {
					conf_err_at(v, e, "%s: member \"%s\" is listed twice",
						    where, iqn);
					iqn = NULL;
					break;
				}
			if (!iqn)
				continue;
			other = member_group(c, c->n_groups, iqn, &oline);
			if (other >= 0) {
				conf_err_at(v, e,
					    "%s: member \"%s\" is already in group '%s' (line %d): "
					    "an initiator belongs to one group", where, iqn,
					    c->groups[other].name, oline);
				continue;
			}
			grp->members[grp->n_members++] = conf_xstrdup(v, iqn);
		}
		c->n_groups++;
	}
}


/* Top level "discovery": { chap = { user; secret; [mutual_user; mutual_secret;] }; } */
void conf_parse_discovery(struct conf_vctx *v, const config_setting_t *root)
{
	const config_setting_t *g = config_setting_get_member(root, "discovery"), *cs;

	if (!g)
		return;
	if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
		conf_err_at(v, g, "discovery must be a group { chap = { .. }; }, not %s",
			    conf_type_name(g));
		return;
	}
	conf_check_keys(v, g, "discovery", CONF_S_DISCOVERY);
	cs = config_setting_get_member(g, "chap");
	if (cs)
		conf_parse_chap(v, cs, "discovery", &v->c->discovery_chap);
}


/* "address" of an allow entry: one network string or a list of them. */
static void parse_addresses(struct conf_vctx *v, const config_setting_t *s, const char *where,
			    struct conf_addr_rule *r)
{
	bool single = config_setting_type(s) == CONFIG_TYPE_STRING;
	int n = single ? 1 : config_setting_length(s);

	if (!single && config_setting_type(s) != CONFIG_TYPE_LIST &&
	    config_setting_type(s) != CONFIG_TYPE_ARRAY) {
		conf_err_at(v, s,
			    "%s: address must be a string \"198.18.0.0/15\" or a list of them, "
			    "not %s", where, conf_type_name(s));
		return;
	}
	if (n == 0) {
		conf_err_at(v, s, "%s: address is empty: the entry would match no login", where);
		return;
	}
	r->nets = conf_xcalloc(v, (size_t)n, sizeof(*r->nets));
	if (!r->nets)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = single ? s : config_setting_get_elem(s, (unsigned)i);
		const char *str, *why;

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			conf_err_at(v, e, "%s: address[%d] must be a string, not %s", where, i,
				    conf_type_name(e));
			continue;
		}
		str = config_setting_get_string(e);
		if (conf_net_parse(str, &r->nets[r->n_nets], &why) < 0) {
			conf_err_at(v, e, "%s: address \"%s\" %s", where, str, why);
			continue;
		}
		r->n_nets++;
	}
}

/*
 * One group entry of "allow": { initiator = "IQN"; chap = { ... }; },
 * { initiator = "IQN"; address = "NET"; [chap = { ... };] } or
 * { address = "NET"; }. Fills t->acls (own credentials) and t->addr_rules
 * (address rules). *@named is the entry's initiator when it names one
 * and was valid (the caller lists it in t->allow), NULL otherwise.
 */
static void parse_acl(struct conf_vctx *v, const config_setting_t *e, const char *twhere,
		      int idx, struct conf_target *t, const char **named)
{
	struct conf_acl *a = &t->acls[t->n_acls];
	struct conf_addr_rule *r = &t->addr_rules[t->n_addr_rules];
	const config_setting_t *cs, *as;
	const char *name = NULL, *why;
	char where[288];
	int rn;

	*named = NULL;
	snprintf(where, sizeof(where), "%s: allow[%d]", twhere, idx);
	conf_check_keys(v, e, where, CONF_S_ALLOW);
	cs = config_setting_get_member(e, "chap");
	as = config_setting_get_member(e, "address");
	rn = conf_get_string(v, e, "initiator", where, !as, &name);
	if (rn < 0)
		return;
	if (rn > 0 && conf_iqn_check(name, &why) < 0) {
		conf_err_at(v, config_setting_get_member(e, "initiator"),
			    "%s: initiator \"%s\": initiator name %s", where, name, why);
		return;
	}
	if (rn > 0)
		snprintf(where, sizeof(where), "%s: allow \"%s\"", twhere, name);
	if (!cs && !as) {
		conf_err_at(v, e, "%s: missing required group 'chap' (an initiator without its "
			    "own credentials is written as a plain string)", where);
		return;
	}
	if (cs && rn == 0) {
		conf_err_at(v, cs, "%s: chap needs an initiator: an entry with only an address "
			    "uses the target's chap", where);
		return;
	}
	if (as) {
		unsigned before = v->n_err;

		parse_addresses(v, as, where, r);
		if (v->n_err != before) {
			free(r->nets);
			memset(r, 0, sizeof(*r));
			return;
		}
	}
	if (cs) {
		conf_parse_chap(v, cs, where, &a->chap);
		if (!a->chap.user) {
			if (config_setting_type(cs) == CONFIG_TYPE_GROUP &&
			    !config_setting_get_member(cs, "user"))
				conf_err_at(v, cs, "%s: chap: missing required user and secret",
					    where);
			free(r->nets);
			r->nets = NULL;
			r->n_nets = 0;
			return;
		}
		a->initiator = conf_xstrdup(v, name);
		a->line = config_setting_source_line(e);
		t->n_acls++;
	}
	if (as) {
		r->initiator = rn > 0 ? conf_xstrdup(v, name) : NULL;
		r->line = conf_setting_line(e);
		t->n_addr_rules++;
	}
	if (rn > 0)
		*named = name;
}

/*
 * Initiator names compare case-insensitively at login, so they must here:
 * two entries for one initiator, one of them with its own credentials,
 * would leave which secret applies to the order of the list. Repeated
 * plain names were always accepted and stay so. @grp[i] tells whether
 * t->allow[i] came from a group entry. Returns true when @name is a
 * duplicate (reported, or a harmless plain repeat).
 */
static bool allow_dup(struct conf_vctx *v, const config_setting_t *e, const char *where,
		      const struct conf_target *t, const bool *grp, const char *name,
		      bool is_grp)
{
	for (unsigned i = 0; i < t->n_allow; i++) {
		if (strcasecmp(t->allow[i], name) != 0)
			continue;
		if (is_grp || grp[i])
			conf_err_at(v, e, "%s: allow \"%s\" is listed more than once; give "
				    "each initiator one entry", where, name);
		return true;
	}
	return false;
}

/*
 * "allow": a list of "ALL", initiator names, and { initiator; chap; }
 * groups. Group entries carry their own CHAP credentials; their names also
 * go into t->allow so that the allow check needs no second table. "ALL"
 * may be combined with groups (anyone may log in, the listed initiators
 * only with their own secret) but not with plain names, which it would
 * make meaningless.
 */
void conf_parse_allow(struct conf_vctx *v, const config_setting_t *g, const char *where,
		      struct conf_target *t)
{
	const config_setting_t *l = config_setting_get_member(g, "allow");
	unsigned n_plain = 0;
	const char *why;
	bool *grp;
	int n;

	if (!l) {
		t->allow_all = true; /* documented default: like tgt, open */
		return;
	}
	if (config_setting_type(l) != CONFIG_TYPE_LIST &&
	    config_setting_type(l) != CONFIG_TYPE_ARRAY) {
		conf_err_at(v, l, "%s: allow must be a list ( \"IQN\", { initiator = \"IQN\"; "
			    "chap = { ... }; } ), not %s", where, conf_type_name(l));
		return;
	}
	n = config_setting_length(l);
	if (n == 0) {
		conf_err_at(v, l, "%s: allow is empty: no initiator could log in (use ( \"ALL\" ))",
			    where);
		return;
	}
	t->allow = conf_xcalloc(v, (size_t)n, sizeof(char *));
	t->acls = conf_xcalloc(v, (size_t)n, sizeof(*t->acls));
	t->addr_rules = conf_xcalloc(v, (size_t)n, sizeof(*t->addr_rules));
	grp = conf_xcalloc(v, (size_t)n, sizeof(*grp));
	if (!t->allow || !t->acls || !t->addr_rules || !grp) {
		free(grp);
		return;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
		const char *name;

		if (config_setting_type(e) == CONFIG_TYPE_GROUP) {
			const char *named;

			parse_acl(v, e, where, i, t, &named);
			if (named && !allow_dup(v, e, where, t, grp, named, true)) {
				grp[t->n_allow] = true;
				t->allow[t->n_allow++] = conf_xstrdup(v, named);
			}
			continue;
		}
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			conf_err_at(v, e, "%s: allow[%d] must be a string or a group { initiator = "
				    "..; chap = { .. }; }, not %s", where, i, conf_type_name(e));
			continue;
		}
		name = config_setting_get_string(e);
		if (!*name) {
			conf_err_at(v, e, "%s: allow[%d] must not be empty", where, i);
			continue;
		}
		if (strcmp(name, "ALL") == 0) {
			t->allow_all = true;
			continue;
		}
		n_plain++;
		if (conf_iqn_check(name, &why) < 0) {
			conf_err_at(v, e, "%s: allow \"%s\": initiator name %s", where, name, why);
			continue;
		}
		if (!allow_dup(v, e, where, t, grp, name, false))
			t->allow[t->n_allow++] = conf_xstrdup(v, name);
	}
	free(grp);
	if (t->allow_all && n_plain > 0)
		conf_err_at(v, l, "%s: allow mixes \"ALL\" with initiator names; use one or "
			    "the other", where);
	for (unsigned i = 0; t->allow_all && i < t->n_addr_rules; i++)
		if (!t->addr_rules[i].initiator) {
			conf_err_at(v, l, "%s: allow mixes \"ALL\" with an entry of addresses only "
				    "(line %d), which \"ALL\" makes meaningless; use one or the other",
				    where, t->addr_rules[i].line);
			break;
		}
	if (t->allow_all) {
		for (unsigned i = 0; i < t->n_allow; i++)
			free(t->allow[i]);
		t->n_allow = 0;
	}
}

const struct conf_group *conf_group_of(const struct conf *c, const char *initiator)
{
	int line, g;

	if (!initiator)
		return NULL;
	g = member_group(c, c->n_groups, initiator, &line);
	return g >= 0 ? &c->groups[g] : NULL;
}

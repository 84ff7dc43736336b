/*
 * target/daemon/access.h - a configured target's LUN masking and mapping
 * (conf_target luns[].groups, read_only; conf.groups) turned into the
 * SCSI target's access table.
 */
#ifndef RTGT_DAEMON_ACCESS_H
#define RTGT_DAEMON_ACCESS_H

#include <stdbool.h>

struct conf;
struct conf_target;
struct scsi_target;

/* Installs @ct's views on @st (scsi_target_set_access): one per initiator
 * group of @c, seeing the LUNs without "groups" under their own number and
 * those mapped to the group under the mapping's; the default view (an
 * initiator in no group) the LUNs without "groups" only. Returns 0 or a
 * negative errno (the table is then unchanged). */
int access_apply(const struct conf *c, const struct conf_target *ct, struct scsi_target *st);

/* Whether what some initiator sees of a target differs between two
 * configurations (mappings, numbers, read_only, group membership). */
bool access_changed(const struct conf *oc, const struct conf_target *o, const struct conf *nc,
		    const struct conf_target *n);

/* Whether the address rules of "allow" differ (same entries in order). */
bool access_addr_changed(const struct conf_target *o, const struct conf_target *n);

#endif

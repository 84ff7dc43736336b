/*
 * target/scsi/iscsi_name.h - iSCSI name syntax (RFC 7143 4.2.7, RFC 3722).
 *
 * Layer: the lowest of target/scsi (target/README.md "Layers"): pure
 * functions, may call libc only. Below both users: target/iscsi's login
 * (the names a peer gives) and target/scsi's reservations (the names in
 * an iSCSI TransportID, SPC-4 7.6.4.6), so neither calls up into the other.
 */
#ifndef RTGT_SCSI_ISCSI_NAME_H
#define RTGT_SCSI_ISCSI_NAME_H

#include <stdbool.h>

/* RFC 7143 4.2.7: an iSCSI name is at most 223 bytes. */
#define ISCSI_NAME_MAX 223

/* Whether @name is a syntactically valid iqn./eui./naa. name as RFC 7143
 * 4.2.7 and RFC 3722 define it: 1..ISCSI_NAME_MAX bytes; "iqn." yyyy-mm "."
 * reversed domain [":" anything], of lower-case letters, digits, '-', '.'
 * and ':' only (the stringprep profile maps upper case to lower, so an
 * upper-case letter means an unprepared name); "eui." and 16 hex digits;
 * "naa." and 16 or 32 hex digits. No byte outside those ever passes, so a
 * valid name has no space, comma, quote, backslash or control byte. */
bool iscsi_name_valid(const char *name);
/* iscsi_name_valid() after the RFC 3722 profile's case mapping: what a peer
 * may call itself or a target. An initiator that sends
 * "iqn.1991-05.com.microsoft:HOST" means the lower-case name (targets and
 * ACLs compare names ignoring case); eui./naa. digits are hex of either
 * case. Login refuses every other name before it becomes an I_T nexus, a
 * registrant in the reservation state or a log field. */
bool iscsi_name_ok(const char *name);

#endif

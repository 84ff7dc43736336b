/* tests/lib/raw_login.c - see raw_login.h. */
#include <errno.h>
#include <string.h>

#include <check.h>

#include "tests/lib/raw_login.h"

int rl_step(struct rl_conn *r, bool transit, unsigned csg, unsigned nsg, const char *kv,
	    size_t kvlen)
{
	struct harness_login_hdr h = { .transit = transit, .csg = csg, .nsg = nsg, .cmdsn = 1 };
	uint8_t pdu[HARNESS_BHS_LEN + 1024], data[8192];
	size_t n;
	ssize_t got;
	int rc;

	memcpy(h.isid, r->isid, 6);
	h.itt = r->itt;
	h.expstatsn = r->expstatsn;
	n = harness_build_login(pdu, sizeof(pdu), &h, kv, kvlen);
	ck_assert(n > 0);
	rc = harness_tcp_send(r->fd, pdu, n);
	if (rc == -EPIPE || rc == -ECONNRESET)
		return RL_CLOSED;
	ck_assert_msg(rc == 0, "send: %s", strerror(-rc));
	got = harness_recv_pdu(r->fd, r->bhs, data, sizeof(data), RL_WAIT_MS);
	if (got == -EPIPE)
		return RL_CLOSED;
	ck_assert_msg(got >= 0, "no login response: %s", strerror((int)-got));
	ck_assert_msg((r->bhs[0] & 0x3f) == HARNESS_OP_LOGIN_RSP, "opcode 0x%02x", r->bhs[0]);
	r->expstatsn = harness_get_be32(r->bhs + 24) + 1;
	if (r->bhs[36] || r->bhs[37])
		return r->bhs[36] << 8 | r->bhs[37];
	return RL_OK;
}

void rl_open(struct rl_conn *r, int fd, uint8_t isid_low)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->isid[0] = 0x80;
	r->isid[5] = isid_low;
	r->itt = 1;
	r->cmdsn = 1;
}

int rl_security(struct rl_conn *r, const char *initiator, const char *target)
{
	char kv[512];
	size_t n;

	n = harness_kv_add(kv, sizeof(kv), 0, "InitiatorName", initiator);
	n = harness_kv_add(kv, sizeof(kv), n, "SessionType", target ? "Normal" : "Discovery");
	if (target)
		n = harness_kv_add(kv, sizeof(kv), n, "TargetName", target);
	n = harness_kv_add(kv, sizeof(kv), n, "AuthMethod", "None");
	ck_assert(n > 0);
	return rl_step(r, true, 0, 1, kv, n);
}

int rl_operational(struct rl_conn *r)
{
	char kv[256];
	size_t n;
	int rc;

	n = harness_kv_add(kv, sizeof(kv), 0, "HeaderDigest", "None");
	n = harness_kv_add(kv, sizeof(kv), n, "DataDigest", "None");
	ck_assert(n > 0);
	rc = rl_step(r, true, 1, 3, kv, n);
	if (rc == RL_OK && !((r->bhs[1] & 0x80) && (r->bhs[1] & 3) == 3))
		return -EAGAIN;
	return rc;
}

int rl_login(struct rl_conn *r, const char *initiator, const char *target)
{
	int rc = rl_security(r, initiator, target);

	return rc == RL_OK ? rl_operational(r) : rc;
}

void rl_send_ffp(struct rl_conn *r, uint8_t op, uint32_t itt, uint32_t cmdsn,
		 const void *data, uint32_t dlen)
{
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 }, pad[4] = { 0 };
	int rc;

	bhs[0] = op;
	bhs[1] = 0x80;
	harness_put_be24(bhs + 5, dlen);
	harness_put_be32(bhs + 16, itt);
	harness_put_be32(bhs + 20, 0xffffffff);
	harness_put_be32(bhs + 24, cmdsn);
	harness_put_be32(bhs + 28, r->expstatsn);
	rc = harness_tcp_send(r->fd, bhs, sizeof(bhs));
	if (!rc && dlen)
		rc = harness_tcp_send(r->fd, data, dlen);
	if (!rc && (dlen & 3))
		rc = harness_tcp_send(r->fd, pad, 4 - (dlen & 3));
	ck_assert_msg(rc == 0, "send opcode 0x%02x: %s", op, strerror(-rc));
}


int rl_logout(struct rl_conn *r, uint8_t reason)
{
	uint8_t bhs[HARNESS_BHS_LEN] = { 0 };
	ssize_t got;
	int rc;

	bhs[0] = 0x40 | 0x06;            /* immediate Logout Request */
	bhs[1] = 0x80 | (reason & 0x7f);
	harness_put_be32(bhs + 16, 0x4000 + r->cmdsn);
	harness_put_be32(bhs + 24, r->cmdsn);
	harness_put_be32(bhs + 28, r->expstatsn);
	rc = harness_tcp_send(r->fd, bhs, sizeof(bhs));
	if (rc == -EPIPE || rc == -ECONNRESET)
		return RL_CLOSED;
	ck_assert_msg(rc == 0, "send Logout: %s", strerror(-rc));
	got = harness_recv_pdu(r->fd, r->bhs, NULL, 0, RL_WAIT_MS);
	if (got == -EPIPE)
		return RL_CLOSED;
	ck_assert_msg(got >= 0, "no answer to Logout: %s", strerror((int)-got));
	if ((r->bhs[0] & 0x3f) != 0x26)
		return -EPROTO;
	r->expstatsn = harness_get_be32(r->bhs + 24) + 1;
	return r->bhs[2];
}

/*
 * tests/lib/raw_login.h - a connection driven PDU by PDU (`rl_`): the login
 * stages with AuthMethod=None, full feature PDUs and Logout built by hand,
 * for tests that send what libiscsi never would. The helpers fail the
 * running Check test on a transport error, so call them from the test's
 * own thread only.
 */
#ifndef RTGT_TESTS_RAW_LOGIN_H
#define RTGT_TESTS_RAW_LOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/harness.h"

#define RL_WAIT_MS 5000        /* for every answer */

struct rl_conn {
	int fd;                    /* borrowed: the caller closes it */
	uint8_t isid[6];
	uint32_t itt;
	uint32_t expstatsn;
	uint32_t cmdsn;            /* next CmdSN to use in full feature phase */
	uint8_t bhs[HARNESS_BHS_LEN];   /* the last answer's BHS */
};

#define RL_CLOSED (-EPIPE)
#define RL_OK 0

/* @fd connected; ISID 0x80 0 0 0 0 @isid_low. */
void rl_open(struct rl_conn *r, int fd, uint8_t isid_low);
/* One login PDU and its answer: RL_OK (status 0), RL_CLOSED, or the
 * positive status (class << 8 | detail). */
int rl_step(struct rl_conn *r, bool transit, unsigned csg, unsigned nsg, const char *kv,
	    size_t kvlen);
/* Security stage with AuthMethod=None (T=1, NSG=1). @target NULL:
 * discovery. */
int rl_security(struct rl_conn *r, const char *initiator, const char *target);
/* Operational stage to full feature phase; RL_OK only when the target
 * answered T=1 NSG=3 (else -EAGAIN or as rl_step). */
int rl_operational(struct rl_conn *r);
/* Both stages. */
int rl_login(struct rl_conn *r, const char *initiator, const char *target);
/* A PDU of full feature phase: opcode, F, ITT, TTT 0xffffffff, CmdSN,
 * ExpStatSN, @dlen bytes of @data (padded). */
void rl_send_ffp(struct rl_conn *r, uint8_t op, uint32_t itt, uint32_t cmdsn,
		 const void *data, uint32_t dlen);
/* A Logout Request with @reason (0 close session, 1 close connection,
 * 2 remove the connection for recovery; others are invalid) as an
 * immediate PDU, and the answer: its Response byte (0..3) for a Logout
 * Response, -EPROTO for anything else (the opcode in r->bhs), RL_CLOSED. */
int rl_logout(struct rl_conn *r, uint8_t reason);

#endif

/*
 * tests/unit/test_notify.c - target/daemon/notify.c: the sd_notify datagrams
 * reach a socket bound where $NOTIFY_SOCKET says (a path or an abstract
 * name), nothing is sent without the variable, bad names are refused.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "target/daemon/notify.h"
#include "tests/lib/ckmain.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	strcpy(dir, "/tmp/rtgt-notify-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify.sock", dir);
	unsetenv("NOTIFY_SOCKET");
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
}

/* A datagram socket bound to @name ('@' = abstract). */
static int listener(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	memcpy(sa.sun_path, name, strlen(name));
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect_msg(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

	ck_assert_int_eq(n, (ssize_t)strlen(want));
	buf[n] = '\0';
	ck_assert_str_eq(buf, want);
}

START_TEST(t01_path_socket)
{
	int fd = listener(path);

	ck_assert_int_eq(setenv("NOTIFY_SOCKET", path, 1), 0);
	ck_assert_int_eq(iscsi_notify("READY=1"), 1);
	expect_msg(fd, "READY=1");
	iscsi_notify_ready();
	expect_msg(fd, "READY=1\nSTATUS=serving");
	iscsi_notify_stopping();
	expect_msg(fd, "STOPPING=1\nSTATUS=draining");
	close(fd);
}
END_TEST

START_TEST(t02_abstract_socket)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@rtgt-notify-test-%d", (int)getpid());
	fd = listener(name);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
	ck_assert_int_eq(iscsi_notify("STATUS=x"), 1);
	expect_msg(fd, "STATUS=x");
	close(fd);
}
END_TEST

START_TEST(t03_no_socket_no_op)
{
	ck_assert_int_eq(iscsi_notify("READY=1"), 0);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "", 1), 0);
	ck_assert_int_eq(iscsi_notify("READY=1"), 0);
	/* the wrappers never fail the caller */
	iscsi_notify_ready();
	iscsi_notify_stopping();
}
END_TEST

START_TEST(t04_bad_names_and_states)
{
	char longname[200];

	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "relative/notify.sock", 1), 0);
	ck_assert_int_eq(iscsi_notify("READY=1"), -EINVAL);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "@", 1), 0);
	ck_assert_int_eq(iscsi_notify("READY=1"), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", longname, 1), 0);
	ck_assert_int_eq(iscsi_notify("READY=1"), -EINVAL);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", path, 1), 0);
	ck_assert_int_eq(iscsi_notify(""), -EINVAL);
	ck_assert_int_eq(iscsi_notify(NULL), -EINVAL);
	/* nobody listening: the error comes back, nothing blocks */
	ck_assert_int_eq(iscsi_notify("READY=1"), -ENOENT);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_path_socket", t01_path_socket),
		CK_CASE("02_abstract_socket", t02_abstract_socket),
		CK_CASE("03_no_socket_no_op", t03_no_socket_no_op),
		CK_CASE("04_bad_names_and_states", t04_bad_names_and_states),
	};

	return ck_main(&(struct ck_suite_def){
		"notify", CK_CASES(cases), .setup = setup, .teardown = teardown });
}

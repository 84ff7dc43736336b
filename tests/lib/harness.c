/*
 * tests/lib/harness.c - see harness.h. Runs rtgtd as a child process; the
 * tests are the only users, so clarity beats speed everywhere here.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>

#include "conf/util.h"
#include "tests/lib/harness.h"

uint64_t harness_now_ms(void)
{
	return conf_mono_ms();
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void harness_fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		buf[i] = (uint8_t)((x * 0x2545F4914F6CDD1DULL) >> 56);
	}
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

/* ---- files ---- */

int harness_free_port(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd, rc = 0;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &len))
		rc = -errno;
	else
		*port = ntohs(a.sin_port);
	close(fd);
	return rc;
}

static int start_janitor(struct harness_daemon *d)
{
	int p[2], rc;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(p[0]);
		close(p[1]);
		return rc;
	}
	if (pid == 0) {
		char c;

		/* Check SIGKILLs a finished test's whole process group: leave it */
		setsid();
		/* hold nothing of the test's (Check's pipes, sockets) but our end */
		for (int fd = 3; fd < 4096; fd++)
			if (fd != p[0])
				close(fd);
		while (read(p[0], &c, 1) != 0 && (errno == EINTR || errno == EAGAIN))
			;
		harness_rm_rf(d->dir);
		_exit(0);
	}
	close(p[0]);
	d->janitor_fd = p[1];
	d->janitor = pid;
	return 0;
}

static void stop_janitor(struct harness_daemon *d)
{
	if (d->janitor_fd >= 0) {
		close(d->janitor_fd);
		d->janitor_fd = -1;
	}
	/* not our child in a forked test: the parent reaps it */
	if (d->janitor > 0)
		waitpid(d->janitor, NULL, 0);
	d->janitor = 0;
}

int harness_init(struct harness_daemon *d)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->last_status = -1;
	d->janitor_fd = -1;
	/* RTGT_TEST_TMP=/dev/shm puts the daemon's files (members) on tmpfs,
	 * where the RAID engine does small I/O inline (raid/ioctx.c) */
	const char *base = getenv("RTGT_TEST_TMP");

	snprintf(d->dir, sizeof(d->dir), "%s/rtgt-net.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(d->dir)) {
		rc = -errno;
		d->dir[0] = '\0';
		return rc;
	}
	rc = start_janitor(d);
	if (rc)
		goto fail_dir;
	snprintf(d->conf, sizeof(d->conf), "%s/rtgt.conf", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/rtgtd.log", d->dir);
	rc = harness_free_port(&d->port);
	if (rc)
		goto fail_dir;
	return 0;
fail_dir:
	stop_janitor(d);
	harness_rm_rf(d->dir);
	d->dir[0] = '\0';
	return rc;
}

void harness_fini(struct harness_daemon *d)
{
	int st;

	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		if (waitpid(d->pid, &st, 0) == d->pid)
			d->last_status = status_code(st);
		d->pid = 0;
	}
	if (d->dir[0]) {
		harness_rm_rf(d->dir);
		d->dir[0] = '\0';
	}
	stop_janitor(d);
}

/* Who registered each entry: a forked Check child inherits the list and must
 * not kill a daemon its parent shares with the other tests. */
static struct {
	struct harness_daemon *d;
	pid_t owner;
} at_exit_list[16];

static void fini_registered(void)
{
	for (unsigned i = 0; i < 16; i++)
		if (at_exit_list[i].d && at_exit_list[i].owner == getpid()) {
			harness_fini(at_exit_list[i].d);
			at_exit_list[i].d = NULL;
		}
}

void harness_fini_at_exit(struct harness_daemon *d)
{
	static bool registered;
	unsigned i;

	if (!registered) {
		atexit(fini_registered);
		registered = true;
	}
	for (i = 0; i < 16; i++)
		if (at_exit_list[i].d == d && at_exit_list[i].owner == getpid())
			return;
	for (i = 0; i < 16; i++)
		if (!at_exit_list[i].d || at_exit_list[i].owner != getpid()) {
			at_exit_list[i].d = d;
			at_exit_list[i].owner = getpid();
			return;
		}
}

static int write_all_path(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

int harness_write_file(const struct harness_daemon *d, const char *name, const char *fmt, ...)
{
	char path[PATH_MAX + 64], *text;
	va_list ap;
	int n, rc;

	if (!strcmp(name, "rtgt.conf"))
		snprintf(path, sizeof(path), "%s", d->conf);
	else
		snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	rc = write_all_path(path, text, (size_t)n);
	free(text);
	return rc;
}

int harness_img_list(char *buf, size_t len, const char *prefix, unsigned n)
{
	size_t used = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		int w = snprintf(buf + used, len - used, "%s\"%s%u.img\"", i ? ", " : "", prefix, i);

		if (w < 0 || (size_t)w >= len - used)
			return -ENOSPC;
		used += (size_t)w;
	}
	return 0;
}

int harness_conf_std_ex(struct harness_daemon *d, const char *daemon_extra, const char *level,
			const char *targets)
{
	bool four = !strcmp(level, "raid5") || !strcmp(level, "raid6") || !strcmp(level, "raid10");

	return harness_write_file(d, "rtgt.conf",
		"daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"info\";\n"
		"           state_dir = \"state\"; %s };\n"
		"pools = ( { name = \"p\"; level = \"%s\"; chunk = \"64K\";\n"
		"            members = ( \"d0.img\", \"d1.img\"%s );\n"
		"            create_size = \"32M\"; } );\n"
		"portals = ( { name = \"lo\"; listen = \"127.0.0.1:%u\"; } );\n"
		"targets = ( %s );\n",
		daemon_extra ? daemon_extra : "", level, four ? ", \"d2.img\", \"d3.img\"" : "",
		d->port, targets ? targets : HARNESS_TARGET_DEFAULT);
}

int harness_conf_std(struct harness_daemon *d, const char *level, const char *targets)
{
	return harness_conf_std_ex(d, NULL, level, targets);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) ? -1 : 0;
}

int harness_rm_rf(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		return errno ? -errno : -EIO;
	return 0;
}

static int count_dir(const char *dir, char *names, size_t nameslen, size_t *used)
{
	char path[PATH_MAX];
	struct dirent *e;
	int n = 0, sub;
	DIR *dh;

	dh = opendir(dir);
	if (!dh)
		return -errno;
	while ((e = readdir(dh))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (names && *used + strlen(e->d_name) + 2 < nameslen)
			*used += (size_t)snprintf(names + *used, nameslen - *used, "%s%s",
						  *used ? " " : "", e->d_name);
		if (e->d_type == DT_DIR) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			sub = count_dir(path, names, nameslen, used);
			if (sub < 0) {
				closedir(dh);
				return sub;
			}
			n += sub;
		}
	}
	closedir(dh);
	return n;
}

int harness_dir_entries(const char *dir, char *names, size_t nameslen)
{
	size_t used = 0;

	if (names && nameslen)
		names[0] = '\0';
	return count_dir(dir, names, nameslen, &used);
}

int harness_copy_file(const char *from, const char *to)
{
	int in, out, rc = 0;
	char buf[65536];
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = -errno;
		goto close_in;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			rc = errno ? -errno : -EIO;
			break;
		}
	}
	if (close(out) && !rc)
		rc = -errno;
close_in:
	close(in);
	return rc;
}

/* ---- the daemon process ---- */

const char *harness_rtgtd_path(void)
{
	const char *p = getenv("RTGTD");

	return p && *p ? p : "bin/rtgtd";
}

static bool port_accepts(uint16_t port)
{
	int fd = harness_tcp_connect(port);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int harness_start(struct harness_daemon *d)
{
	const char *bin = harness_rtgtd_path();
	pid_t parent = getpid(), pid;
	uint64_t deadline;
	int st;

	if (access(bin, X_OK))
		return -ENOENT;
	if (d->pid > 0)
		return -EBUSY;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd;

		/* never outlive a test process killed by Check's timeout */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
		execl(bin, "rtgtd", "-c", d->conf, (char *)NULL);
		dprintf(STDERR_FILENO, "harness: exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	d->pid = pid;
	deadline = harness_now_ms() + HARNESS_START_TIMEOUT_MS;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid) {
			d->pid = 0;
			d->last_status = status_code(st);
			return -ECHILD;
		}
		if (port_accepts(d->port)) {
			/* the port might belong to someone else: insist on our child */
			if (waitpid(pid, &st, WNOHANG) == pid) {
				d->pid = 0;
				d->last_status = status_code(st);
				return -ECHILD;
			}
			return 0;
		}
		if (harness_now_ms() > deadline)
			break;
		sleep_ms(30);
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &st, 0) == pid)
		d->last_status = status_code(st);
	d->pid = 0;
	return -ETIMEDOUT;
}

int harness_stop(struct harness_daemon *d)
{
	uint64_t deadline;
	int st;

	if (d->pid <= 0)
		return -ESRCH;
	kill(d->pid, SIGTERM);
	deadline = harness_now_ms() + HARNESS_STOP_TIMEOUT_MS;
	while (harness_now_ms() < deadline) {
		pid_t w = waitpid(d->pid, &st, WNOHANG);

		if (w == d->pid) {
			d->pid = 0;
			d->last_status = status_code(st);
			return d->last_status;
		}
		if (w < 0) {
			d->pid = 0;
			return -errno;
		}
		sleep_ms(20);
	}
	kill(d->pid, SIGKILL);
	if (waitpid(d->pid, &st, 0) == d->pid)
		d->last_status = status_code(st);
	d->pid = 0;
	return -ETIMEDOUT;
}

bool harness_alive(struct harness_daemon *d)
{
	int st;

	if (d->pid <= 0)
		return false;
	if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
		d->pid = 0;
		d->last_status = status_code(st);
		return false;
	}
	/* not our child (Check forked this test): ask the kernel */
	return kill(d->pid, 0) == 0;
}

ssize_t harness_read_log(const struct harness_daemon *d, char *buf, size_t len)
{
	int fd = open(d->log, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	off_t size;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)(len - 1))
		lseek(fd, size - (off_t)(len - 1), SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	buf[n] = '\0';
	close(fd);
	return n;
}

unsigned harness_log_count(const struct harness_daemon *d, const char *needle)
{
	static char buf[1 << 20];
	unsigned n = 0;

	if (harness_read_log(d, buf, sizeof(buf)) <= 0)
		return 0;
	for (const char *p = buf; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

void harness_dump_log(const struct harness_daemon *d, FILE *f, unsigned max_lines)
{
	static char buf[65536];
	ssize_t n = harness_read_log(d, buf, sizeof(buf));
	unsigned lines = 0;
	char *p;

	if (n < 0) {
		fprintf(f, "  [rtgtd log %s unreadable: %s]\n", d->log, strerror((int)-n));
		return;
	}
	p = buf + n;
	while (p > buf) {
		p--;
		if (*p == '\n' && p + 1 < buf + n && ++lines > max_lines) {
			p++;
			break;
		}
	}
	fprintf(f, "  --- rtgtd log (%s), last lines ---\n", d->log);
	while (*p) {
		char *nl = strchr(p, '\n');

		if (!nl)
			nl = p + strlen(p);
		/* a runaway log line must not drown the test report */
		if (nl - p > 300)
			fprintf(f, "  | %.300s... [%d bytes]\n", p, (int)(nl - p));
		else
			fprintf(f, "  | %.*s\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
	fflush(f);
}

long harness_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* harness_run() and harness_run_out(): @with_stdout sends stdout to @err
 * too instead of /dev/null. */
static int run_capture(char *const argv[], char *err, size_t errlen, int timeout_ms,
		       bool with_stdout)
{
	size_t used = 0;
	uint64_t deadline;
	int pfd[2], st, rc;
	pid_t pid;

	if (errlen)
		err[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (nul >= 0) {
			dup2(nul, STDIN_FILENO);
			dup2(nul, STDOUT_FILENO);
		}
		if (with_stdout)
			dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execv(argv[0], argv);
		dprintf(STDERR_FILENO, "harness: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	deadline = harness_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		uint64_t now = harness_now_ms();
		char tmp[4096];
		ssize_t n;

		if (now >= deadline) {
			close(pfd[0]);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		n = read(pfd[0], tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (errlen && used < errlen - 1) {
			size_t take = (size_t)n < errlen - 1 - used ? (size_t)n : errlen - 1 - used;

			memcpy(err + used, tmp, take);
			used += take;
			err[used] = '\0';
		}
	}
	close(pfd[0]);
	/* stderr closed: the child is exiting, or closed it on purpose */
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (harness_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		sleep_ms(10);
	}
	return status_code(st);
}

int harness_run(char *const argv[], char *err, size_t errlen, int timeout_ms)
{
	return run_capture(argv, err, errlen, timeout_ms, false);
}

int harness_run_out(char *const argv[], char *out, size_t outlen, int timeout_ms)
{
	return run_capture(argv, out, outlen, timeout_ms, true);
}

/* ---- libiscsi ---- */

int harness_url(char *buf, size_t len, uint16_t port, const char *iqn, int lun)
{
	int n = snprintf(buf, len, "iscsi://127.0.0.1:%u/%s/%d", port, iqn, lun);

	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

struct iscsi_context *harness_iscsi_login(uint16_t port, const struct harness_login *o,
					  char *err, size_t errlen)
{
	struct iscsi_context *c;
	char portal[64];
	int rc;

	if (errlen)
		err[0] = '\0';
	c = iscsi_create_context(o->initiator ? o->initiator : HARNESS_INITIATOR);
	if (!c) {
		snprintf(err, errlen, "iscsi_create_context failed");
		return NULL;
	}
	snprintf(portal, sizeof(portal), "127.0.0.1:%u", port);
	iscsi_set_noautoreconnect(c, 1);
	iscsi_set_timeout(c, o->timeout_s ? o->timeout_s : 30);
	if (o->isid_rnd)
		iscsi_set_isid_random(c, o->isid_rnd, 0);
	iscsi_set_header_digest(c, o->crc32c ? ISCSI_HEADER_DIGEST_CRC32C : ISCSI_HEADER_DIGEST_NONE);
	if (o->user && iscsi_set_initiator_username_pwd(c, o->user, o->secret))
		goto fail;
	if (o->mutual_user && iscsi_set_target_username_pwd(c, o->mutual_user, o->mutual_secret))
		goto fail;
	if (o->discovery) {
		if (iscsi_set_session_type(c, ISCSI_SESSION_DISCOVERY))
			goto fail;
		rc = iscsi_connect_sync(c, portal);
		if (!rc)
			rc = iscsi_login_sync(c);
	} else {
		if (iscsi_set_targetname(c, o->target ? o->target : HARNESS_TARGET) ||
		    iscsi_set_session_type(c, ISCSI_SESSION_NORMAL))
			goto fail;
		if (o->login_only) {
			rc = iscsi_connect_sync(c, portal);
			if (!rc)
				rc = iscsi_login_sync(c);
		} else {
			rc = iscsi_full_connect_sync(c, portal, o->lun);
		}
	}
	if (rc)
		goto fail;
	return c;
fail:
	snprintf(err, errlen, "%s", iscsi_get_error(c));
	iscsi_destroy_context(c);
	return NULL;
}

void harness_iscsi_logout(struct iscsi_context *c)
{
	if (!c)
		return;
	if (iscsi_is_logged_in(c))
		iscsi_logout_sync(c);
	iscsi_destroy_context(c);
}

/* ---- raw TCP ---- */

int harness_tcp_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, one = 1, rc;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int harness_tcp_send(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t harness_tcp_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = harness_now_ms();
		ssize_t n;
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pf, 1, (int)(deadline - now));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = recv(fd, p + got, len - got, 0);
		if (n == 0)
			return (ssize_t)got;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ECONNRESET)
				return (ssize_t)got;
			return -errno;
		}
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int harness_tcp_wait_closed(int fd, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
	char buf[4096];

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = harness_now_ms();
		ssize_t n;
		int r;

		if (now >= deadline)
			return 0;
		r = poll(&pf, 1, (int)(deadline - now));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return 1;
		if (n < 0) {
			if (errno == ECONNRESET || errno == EPIPE)
				return 1;
			if (errno != EINTR && errno != EAGAIN)
				return -errno;
		}
	}
}

/* ---- PDUs ---- */

/* the test programs of tests/net/ may include tests/lib/ only: these
 * forward to conf/util.h's accessors for them */
void harness_put_be16(uint8_t *p, uint16_t v)
{
	conf_put_be16(p, v);
}

void harness_put_be24(uint8_t *p, uint32_t v)
{
	conf_put_be24(p, v);
}

void harness_put_be32(uint8_t *p, uint32_t v)
{
	conf_put_be32(p, v);
}

uint32_t harness_get_be24(const uint8_t *p)
{
	return conf_get_be24(p);
}

uint32_t harness_get_be32(const uint8_t *p)
{
	return conf_get_be32(p);
}

size_t harness_kv_add(char *buf, size_t cap, size_t off, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	if (off + kl + 1 + vl + 1 > cap)
		return 0;
	memcpy(buf + off, key, kl);
	buf[off + kl] = '=';
	memcpy(buf + off + kl + 1, value, vl);
	buf[off + kl + 1 + vl] = '\0';
	return off + kl + 1 + vl + 1;
}

size_t harness_build_login(uint8_t *buf, size_t cap, const struct harness_login_hdr *h,
			   const void *kv, size_t kvlen)
{
	size_t padded = (kvlen + 3) & ~(size_t)3;

	if (cap < HARNESS_BHS_LEN + padded || kvlen > 0xffffff)
		return 0;
	memset(buf, 0, HARNESS_BHS_LEN + padded);
	buf[0] = 0x40 | HARNESS_OP_LOGIN_REQ;
	buf[1] = (uint8_t)((h->transit ? 0x80 : 0) | (h->cont ? 0x40 : 0) |
			   (h->csg & 3) << 2 | (h->nsg & 3));
	buf[2] = 0;   /* Version-max */
	buf[3] = 0;   /* Version-min */
	harness_put_be24(buf + 5, h->dsl_override ? h->dsl_override : (uint32_t)kvlen);
	memcpy(buf + 8, h->isid, 6);
	harness_put_be16(buf + 14, h->tsih);
	harness_put_be32(buf + 16, h->itt);
	harness_put_be16(buf + 20, h->cid);
	harness_put_be32(buf + 24, h->cmdsn);
	harness_put_be32(buf + 28, h->expstatsn);
	if (kvlen)
		memcpy(buf + HARNESS_BHS_LEN, kv, kvlen);
	return HARNESS_BHS_LEN + padded;
}

ssize_t harness_recv_pdu(int fd, uint8_t bhs[HARNESS_BHS_LEN], uint8_t *data, size_t datacap,
			 int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
	size_t dsl, padded, off = 0;
	ssize_t n;

	n = harness_tcp_recv(fd, bhs, HARNESS_BHS_LEN, timeout_ms);
	if (n < 0)
		return n;
	if (n < HARNESS_BHS_LEN)
		return -EPIPE;
	dsl = harness_get_be24(bhs + 5);
	padded = (dsl + 3) & ~(size_t)3;
	while (off < padded) {
		uint8_t junk[4096];
		uint8_t *dst = off < datacap ? data + off : junk;
		size_t want = off < datacap ? datacap - off : sizeof(junk);
		uint64_t now = harness_now_ms();

		if (want > padded - off)
			want = padded - off;
		if (now >= deadline)
			return -ETIMEDOUT;
		n = harness_tcp_recv(fd, dst, want, (int)(deadline - now));
		if (n < 0)
			return n;
		if ((size_t)n < want)
			return -EPIPE;
		off += want;
	}
	return (ssize_t)dsl;
}

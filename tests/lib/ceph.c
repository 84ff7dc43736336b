/*
 * tests/lib/ceph.c - see ceph.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/ceph.h"
#include "tests/lib/harness.h"

static char cluster_base[64];   /* mkdtemp dir holding cluster_dir */
static char cluster_dir[128];   /* DIR of scripts/ceph-cluster.sh; "" while none runs */
static pid_t cluster_owner;     /* only this process may stop it */
static int stop_registered;

const char *cl_dir(void)
{
	return cluster_dir;
}

void cl_stop(void)
{
	char *argv[] = { "scripts/ceph-cluster.sh", "stop", cluster_dir, NULL };
	char err[512];

	if (getpid() != cluster_owner || !cluster_dir[0])
		return;
	harness_run(argv, err, sizeof(err), 60000);   /* removes cluster_dir */
	rmdir(cluster_base);
	cluster_dir[0] = '\0';
}

int cl_start(const char *prefix, char *why, size_t whylen)
{
	char *argv[] = { "scripts/ceph-cluster.sh", "start", cluster_dir, NULL };
	char err[4096];
	int rc;

#if !__has_include(<rbd/librbd.h>)
	snprintf(why, whylen, "rtgtd is built without librbd (install librbd-dev librados-dev)");
	return 1;
#endif
	if (system("{ command -v ceph-mon && command -v ceph-mgr && command -v ceph-osd && "
		   "command -v ceph && command -v rbd; } >/dev/null 2>&1") != 0) {
		snprintf(why, whylen, "Ceph packages missing (scripts/deps.sh installs ceph-mon "
			 "ceph-mgr ceph-osd ceph-common)");
		return 1;
	}
	if (cluster_dir[0])
		return -EBUSY;
	if (getenv("CEPH_DIR") && getenv("CEPH_DIR")[0]) {
		/* a cluster already running (scripts/ceph-cluster.sh start DIR):
		 * used as it is; cluster_owner stays 0, so it is never stopped */
		snprintf(cluster_dir, sizeof(cluster_dir), "%s", getenv("CEPH_DIR"));
		return 0;
	}
	snprintf(cluster_base, sizeof(cluster_base), "/tmp/%s.XXXXXX", prefix);
	if (!mkdtemp(cluster_base))
		return -errno;
	snprintf(cluster_dir, sizeof(cluster_dir), "%s/ceph", cluster_base);
	cluster_owner = getpid();
	if (!stop_registered && atexit(cl_stop) == 0)
		stop_registered = 1;
	rc = harness_run(argv, err, sizeof(err), 180000);
	if (rc == 3) {   /* the script found a Ceph binary missing */
		snprintf(why, whylen, "%.900s", err);
		cl_stop();
		return 1;
	}
	if (rc != 0) {
		fprintf(stderr, "ceph-cluster.sh start: exit %d\n%s\n", rc, err);
		cl_stop();
		return -EIO;
	}
	return 0;
}

int cl_run_line(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	out[0] = '\0';
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	/* read to the end: the command must not die of SIGPIPE */
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	out[strcspn(out, "\n")] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : -EINTR;
}

long long cl_image_used(const char *name)
{
	char line[256];
	int rc = cl_run_line(line, sizeof(line),
			     "rbd --conf %s/ceph.conf --name client.admin du --format json %s "
			     "2>/dev/null | grep -o '\"used_size\":[0-9]*' | head -1 | cut -d: -f2",
			     cluster_dir, name);

	if (rc != 0 || !line[0])
		return -1;
	return atoll(line);
}

void cl_print_start_failure(int rc, int checks)
{
	printf("0%%: Checks: %d, Failures: 1: cannot start the Ceph test cluster: %s\n", checks,
	       strerror(-rc));
}

int cl_main(const char *prefix, const struct ck_suite_def *def)
{
	char why[1024];
	int rc = cl_start(prefix, why, sizeof(why));

	if (rc > 0) {
		/* scripts/run-tests.sh shows this line in its summary */
		printf("0%%: Checks: 0, SKIPPED: %s\n", why);
		return EXIT_SUCCESS;
	}
	if (rc < 0) {
		cl_print_start_failure(rc, 0);
		return EXIT_FAILURE;
	}
	rc = ck_main(def);
	cl_stop();
	return rc;
}

/*
 * target/daemon/ctl.c - the control socket server (see ctl.h for the
 * protocol).
 *
 * Everything runs on one reactor (the loop given to iscsi_ctl_start()), so
 * nothing here is locked. Each client is a small state machine:
 *
 *   READING  -- a line is complete: answer it; the answer cannot be sent
 *               at once ------------------------------> WRITING  [client_flush]
 *            -- line longer than ICTL_MAX_REQUEST ----> CLOSING  [on_client]
 *            -- EOF: remaining lines answered --------> freed    [on_client]
 *            -- read/send error, EPOLLERR ------------> freed    [client_close]
 *   WRITING  -- answer sent --------------------------> READING  [client_flush]
 *               (buffered lines are answered before reading more)
 *   CLOSING  -- error answer sent, input drained -----> freed    [client_flush]
 *   any      -- iscsi_ctl_stop() ---------------------> freed    [client_close]
 *
 * client_pump() drives READING/WRITING: flush what is pending, then answer
 * the next buffered line, until something has to wait for the socket.
 *
 * Invariants (client_check): out_off <= out_len; in_len <= ICTL_MAX_REQUEST;
 * out is NULL exactly when nothing is pending; in READING nothing is
 * pending; WRITING and CLOSING wait for EV_WRITE only, so a client that does
 * not read its answers cannot make us buffer more than one answer plus one
 * request; CLOSING has no input buffered; the client is in ctl->clients.
 *
 * Requests are answered in order. The last request of a client that
 * half-closes without a final newline is still answered
 * (`printf '{"cmd":"status"}' | nc -U SOCKET`).
 *
 * Layer: services (target/daemon/README.md "Layers"), above base. May call:
 * net/, conf/, json-c, libc. Knows no command: main.c's handlers reach it
 * only through the struct iscsi_ctl_ops given to iscsi_ctl_start(). Calls
 * no other file of the folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/util.h"
#include "net/net.h"
#include "target/daemon/ctl.h"

#define MOD "ctl"
#define CTL_ERR_MAX 512

enum client_state {
	CLIENT_READING,
	CLIENT_WRITING,
	CLIENT_CLOSING,
};

struct ctl_client {
	struct iscsi_ctl *ctl;      /* owner; never NULL */
	int fd;
	enum client_state state;
	bool eof;                   /* the peer will send nothing more */
	char *in;                   /* owned, ICTL_MAX_REQUEST + 1 bytes */
	size_t in_len;
	char *out;                  /* owned, NULL when nothing is pending */
	size_t out_len, out_off;
	struct ctl_client *next;    /* in ctl->clients */
};

struct iscsi_ctl {
	struct ev_loop *loop;       /* borrowed */
	int lfd;
	char *path;                 /* owned */
	dev_t dev;                  /* the socket file we bound, to unlink only it */
	ino_t ino;
	struct iscsi_ctl_ops ops;
	struct ctl_client *clients; /* owned list */
	unsigned n_clients;
};

static bool client_check(const struct ctl_client *cl)
{
	const struct ctl_client *it;

	if (cl->out_off > cl->out_len || cl->in_len > ICTL_MAX_REQUEST)
		return false;
	if (cl->state == CLIENT_READING && cl->out_len != 0)
		return false;
	if (cl->state == CLIENT_CLOSING && cl->in_len != 0)
		return false;
	if ((cl->out == NULL) != (cl->out_len == 0))
		return false;
	for (it = cl->ctl->clients; it && it != cl; it = it->next)
		;
	return it == cl;
}

static void client_close(struct ctl_client *cl)
{
	struct iscsi_ctl *ctl = cl->ctl;
	struct ctl_client **pp;

	for (pp = &ctl->clients; *pp && *pp != cl; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = cl->next;
	ctl->n_clients--;
	ev_io_del(ctl->loop, cl->fd);
	close(cl->fd);
	free(cl->in);
	free(cl->out);
	free(cl);
}

/* Queues one reply line; the JSON text is copied. */
static int client_queue(struct ctl_client *cl, struct json_object *reply)
{
	const char *txt = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(txt);
	char *buf;

	buf = realloc(cl->out, cl->out_len + len + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf + cl->out_len, txt, len);
	buf[cl->out_len + len] = '\n';
	cl->out = buf;
	cl->out_len += len + 1;
	return 0;
}

static struct json_object *error_reply(const char *msg)
{
	struct json_object *r = json_object_new_object();

	if (!r)
		return NULL;
	json_object_object_add(r, "ok", json_object_new_boolean(0));
	json_object_object_add(r, "error", json_object_new_string(msg));
	return r;
}

/* Parses one request line and builds its reply (never NULL unless ENOMEM). */
static struct json_object *answer(struct iscsi_ctl *ctl, const char *line, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req = NULL, *cmd, *args = NULL, *reply = NULL;
	char err[CTL_ERR_MAX] = "";
	bool own_args = false;
	int rc;

	if (!tok)
		return NULL;
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (!req) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		snprintf(err, sizeof(err), "bad request: %s",
			 jerr == json_tokener_continue ? "incomplete JSON"
						       : json_tokener_error_desc(jerr));
		reply = error_reply(err);
		goto free_req;
	}
	/* trailing bytes after the object are as bad as a broken one */
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
			reply = error_reply("bad request: extra data after the JSON object");
			goto free_req;
		}
	}
	if (!json_object_is_type(req, json_type_object) ||
	    !json_object_object_get_ex(req, "cmd", &cmd) ||
	    !json_object_is_type(cmd, json_type_string) || !*json_object_get_string(cmd)) {
		reply = error_reply("bad request: expected {\"cmd\":\"...\", \"args\":[...]}");
		goto free_req;
	}
	if (json_object_object_get_ex(req, "args", &args) &&
	    !json_object_is_type(args, json_type_array)) {
		reply = error_reply("bad request: \"args\" must be an array");
		goto free_req;
	}
	if (!args) {
		args = json_object_new_array();
		own_args = true;
		if (!args)
			goto free_req;
	}
	reply = json_object_new_object();
	if (!reply)
		goto free_args;
	json_object_object_add(reply, "ok", json_object_new_boolean(1));
	rc = ctl->ops.handle(ctl->ops.arg, json_object_get_string(cmd), args, reply, err,
			     sizeof(err));
	if (rc) {
		err[sizeof(err) - 1] = '\0';
		if (!err[0])
			snprintf(err, sizeof(err), "%s", strerror(rc < 0 ? -rc : rc));
		json_object_put(reply);
		reply = error_reply(err);
	}
	LOG_DBG(MOD, "%s -> %s", json_object_get_string(cmd), rc ? err : "ok");
free_args:
	if (own_args)
		json_object_put(args);
free_req:
	json_object_put(req);
	json_tokener_free(tok);
	return reply;
}

static bool is_blank(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* Answers every complete line in the input buffer while nothing is pending
 * (one answer in flight at a time bounds what a slow reader costs us). With
 * @at_eof the rest of the buffer counts as a last line. */
static int client_process(struct ctl_client *cl, bool at_eof)
{
	while (cl->out_len == 0 && cl->in_len > 0) {
		char *nl = memchr(cl->in, '\n', cl->in_len);
		size_t line_len, used;
		struct json_object *reply;
		int rc;

		if (!nl && !at_eof)
			break;
		line_len = nl ? (size_t)(nl - cl->in) : cl->in_len;
		used = nl ? line_len + 1 : line_len;
		/* blank lines (keepalives from a hand-typed session) are skipped */
		if (is_blank(cl->in, line_len)) {
			memmove(cl->in, cl->in + used, cl->in_len - used);
			cl->in_len -= used;
			continue;
		}
		reply = answer(cl->ctl, cl->in, line_len);
		memmove(cl->in, cl->in + used, cl->in_len - used);
		cl->in_len -= used;
		if (!reply)
			return -ENOMEM;
		rc = client_queue(cl, reply);
		json_object_put(reply);
		if (rc)
			return rc;
	}
	return 0;
}

/* Closing a unix socket with unread input resets the peer, which may then
 * lose our last answer: read and drop what is already queued (bounded). */
static void drain_input(struct ctl_client *cl)
{
	char sink[4096];

	for (int i = 0; i < 64; i++)
		if (recv(cl->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0)
			break;
	shutdown(cl->fd, SHUT_WR);
}

/* Sends what is pending and moves the state machine along. Returns 0, or
 * a negative errno when the client has to go. */
static int client_flush(struct ctl_client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		cl->out_off += (size_t)n;
	}
	if (cl->out_off == cl->out_len) {
		free(cl->out);
		cl->out = NULL;
		cl->out_len = cl->out_off = 0;
		if (cl->state == CLIENT_CLOSING) {
			drain_input(cl);
			return -ECONNRESET; /* done: nothing more to say */
		}
		if (cl->state == CLIENT_WRITING) {
			cl->state = CLIENT_READING;
			if (ev_io_mod(cl->ctl->loop, cl->fd, EV_READ))
				return -EIO;
		}
		return 0;
	}
	if (cl->state == CLIENT_READING) {
		cl->state = CLIENT_WRITING;
		if (ev_io_mod(cl->ctl->loop, cl->fd, EV_WRITE))
			return -EIO;
	}
	return 0;
}

/* Reads what is available; returns 1 at EOF, 0, or a negative errno. */
static int client_read(struct ctl_client *cl)
{
	for (;;) {
		ssize_t n;

		if (cl->in_len == ICTL_MAX_REQUEST) {
			if (memchr(cl->in, '\n', cl->in_len))
				return 0; /* answer buffered lines first */
			return -EMSGSIZE;
		}
		n = recv(cl->fd, cl->in + cl->in_len, ICTL_MAX_REQUEST - cl->in_len, 0);
		if (n == 0)
			return 1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		cl->in_len += (size_t)n;
		if (memchr(cl->in + cl->in_len - (size_t)n, '\n', (size_t)n))
			return 0; /* answer before reading further */
	}
}

/* Flush, answer the next buffered line, repeat, until something has to
 * wait for the socket. Returns 0 or a negative errno (client must go). */
static int client_pump(struct ctl_client *cl)
{
	int rc;

	for (;;) {
		if (cl->out_len) {
			rc = client_flush(cl);
			if (rc || cl->out_len)
				return rc;
		}
		rc = client_process(cl, cl->eof);
		if (rc || cl->out_len == 0)
			return rc;
	}
}

static void on_client(struct ev_loop *loop, int fd, uint32_t events, void *arg)
{
	struct ctl_client *cl = arg;
	int rc = 0;

	RTGT_CHECK(client_check(cl));
	if (events & EPOLLERR) {
		rc = -EPIPE;
		goto done;
	}
	if (cl->state == CLIENT_READING && (events & (EPOLLIN | EPOLLHUP))) {
		rc = client_read(cl);
		if (rc == -EMSGSIZE) {
			struct json_object *r;
			char msg[96];

			snprintf(msg, sizeof(msg), "request longer than %d bytes", ICTL_MAX_REQUEST);
			LOG_WARN(MOD, "control client: %s; closing", msg);
			r = error_reply(msg);
			cl->in_len = 0;
			cl->state = CLIENT_CLOSING;
			rc = r ? client_queue(cl, r) : -ENOMEM;
			json_object_put(r);
			if (rc == 0 && ev_io_mod(loop, fd, EV_WRITE))
				rc = -EIO;
			if (rc)
				goto done;
		} else if (rc < 0) {
			goto done;
		} else if (rc == 1) {
			cl->eof = true;
		}
	}
	rc = client_pump(cl);
	/* everything the peer sent before EOF is answered: hang up */
	if (rc == 0 && cl->eof && cl->out_len == 0)
		rc = -ECONNRESET;
done:
	if (rc) {
		if (rc != -ECONNRESET && rc != -EPIPE)
			LOG_DBG(MOD, "client fd %d closed: %s", fd, strerror(-rc));
		client_close(cl);
		return;
	}
	RTGT_CHECK(client_check(cl));
}

static void on_accept(struct ev_loop *loop, int lfd, uint32_t events, void *arg)
{
	struct iscsi_ctl *ctl = arg;

	for (;;) {
		struct ctl_client *cl;
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				LOG_WARN(MOD, "accept on %s: %s", ctl->path, strerror(errno));
			return;
		}
		if (ctl->n_clients >= ICTL_MAX_CLIENTS) {
			LOG_WARN(MOD, "%u control clients already connected; refusing one",
				 ctl->n_clients);
			close(fd);
			continue;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl)
			goto close_fd;
		cl->in = malloc(ICTL_MAX_REQUEST + 1);
		if (!cl->in)
			goto free_client;
		cl->ctl = ctl;
		cl->fd = fd;
		cl->state = CLIENT_READING;
		if (ev_io_add(loop, fd, EV_READ, on_client, cl))
			goto free_in;
		cl->next = ctl->clients;
		ctl->clients = cl;
		ctl->n_clients++;
		continue;

free_in:
		free(cl->in);
free_client:
		free(cl);
close_fd:
		LOG_WARN(MOD, "cannot take a control client: out of memory");
		close(fd);
	}
}

/* mkdir -p of @path's parent. */
static int make_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		if (last)
			break;
		*p = '/';
	}
	return 0;
}

/* Removes a socket file nobody accepts on any more. */
static int clear_stale(const struct sockaddr_un *sa, const char *path)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		LOG_ERR(MOD, "%s exists and is not a socket; not replacing it", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		LOG_ERR(MOD, "%s: another daemon is listening on it", path);
		return -EADDRINUSE;
	}
	if (errno != ECONNREFUSED) {
		rc = -errno;
		LOG_ERR(MOD, "%s: cannot tell whether it is in use: %s", path, strerror(errno));
		return rc;
	}
	LOG_INFO(MOD, "replacing stale control socket %s", path);
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

int iscsi_ctl_start(struct ev_loop *loop, const char *path, const struct iscsi_ctl_ops *ops,
		    struct iscsi_ctl **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct iscsi_ctl *ctl;
	struct stat st;
	int rc;

	*out = NULL;
	if (!ops || !ops->handle || !path || !*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		LOG_ERR(MOD, "control socket path %s is too long for a unix socket", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->loop = loop;
	ctl->ops = *ops;
	ctl->lfd = -1;
	ctl->path = strdup(path);
	if (!ctl->path) {
		rc = -ENOMEM;
		goto free_ctl;
	}
	rc = make_parent(path);
	if (rc) {
		LOG_ERR(MOD, "cannot create the directory of %s: %s", path, strerror(-rc));
		goto free_ctl;
	}
	rc = clear_stale(&sa, path);
	if (rc)
		goto free_ctl;
	ctl->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->lfd < 0) {
		rc = -errno;
		goto free_ctl;
	}
	if (bind(ctl->lfd, (struct sockaddr *)&sa, sizeof(sa))) {
		rc = -errno;
		LOG_ERR(MOD, "bind %s: %s", path, strerror(errno));
		goto close_lfd;
	}
	/* Narrow the mode before listen(): until then a connect() is refused,
	 * so no one slips in through the umask-given mode. */
	if (chmod(path, 0600) || stat(path, &st)) {
		rc = -errno;
		LOG_ERR(MOD, "chmod %s: %s", path, strerror(errno));
		goto unlink_path;
	}
	ctl->dev = st.st_dev;
	ctl->ino = st.st_ino;
	if (listen(ctl->lfd, 16)) {
		rc = -errno;
		goto unlink_path;
	}
	rc = ev_io_add(loop, ctl->lfd, EV_READ, on_accept, ctl);
	if (rc)
		goto unlink_path;
	LOG_INFO(MOD, "control socket %s", path);
	*out = ctl;
	return 0;

unlink_path:
	unlink(path);
close_lfd:
	close(ctl->lfd);
free_ctl:
	free(ctl->path);
	free(ctl);
	return rc;
}

void iscsi_ctl_stop(struct iscsi_ctl *ctl)
{
	struct stat st;

	if (!ctl)
		return;
	while (ctl->clients)
		client_close(ctl->clients);
	ev_io_del(ctl->loop, ctl->lfd);
	close(ctl->lfd);
	/* a newer daemon may have replaced our file: leave its socket alone */
	if (stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev && st.st_ino == ctl->ino)
		unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}

unsigned iscsi_ctl_clients(const struct iscsi_ctl *ctl)
{
	return ctl ? ctl->n_clients : 0;
}

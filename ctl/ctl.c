/*
 * rtsandboxctl: the command-line client of rtsandboxd's control socket.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buildconf.h"
#include "doctor.h"
#include "fromopts.h"
#include "rpc.h"

struct ctl_opts {
	const char	*socket;
	int		 json;
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: rtsandboxctl [-s socket] [--json] command [argument ...]\n"
	    "\n"
	    "commands:\n"
	    "  stats                  processes (pid, memory), uptime and "
	    "counters\n"
	    "  start CHANNEL [-p PROFILE]\n"
	    "                         start the channel's container and broker "
	    "(profile\n"
	    "                         \"default\" unless given)\n"
	    "  status CHANNEL         container state, image, profile, broker\n"
	    "  paths CHANNEL          host paths of sessions/ and attachments/\n"
	    "  stop CHANNEL           remove the container, stop the broker\n"
	    "  fresh CHANNEL          stop, then archive the session files\n"
	    "  ps                     the managed containers\n"
	    "  turn CHANNEL TEXT [--profile P] [--author ID:NAME] [--image FILE]...\n"
	    "       [--out DIR] [--thinking LEVEL] [--turn-id ID]\n"
	    "                         run one turn: progress on a terminal, the\n"
	    "                         reply on stdout, reply files saved in DIR\n"
	    "  cancel CHANNEL         cancel the channel's running turn\n"
	    "  research CHANNEL TASK [--author ID:NAME] [--thinking LEVEL]\n"
	    "       [--search-file FILE]\n"
	    "                         run a research job, print its report;"
	    " web_search\n"
	    "                         is answered with FILE's text when given\n"
	    "  precheck CHANNEL PROFILE SCRIPT [--server NAME:TOOL[,TOOL]]...\n"
	    "       [--time-zone ZONE] [--title TITLE] [--id N]\n"
	    "                         run SCRIPT (a file) as a precheck run "
	    "with the\n"
	    "                         tools granted; print what it returned\n"
	    "  attach CHANNEL MESSAGE_ID URL... [--ref URL]...\n"
	    "                         download attachments into the channel's\n"
	    "                         attachments/, each named by its URL's "
	    "last path\n"
	    "                         segment (--ref: the referenced "
	    "message's)\n"
	    "  call METHOD [PARAMS]   send one JSON-RPC request, print its "
	    "result\n"
	    "  doctor [-f CONFIG]     check the host as rtsandboxd will meet "
	    "it with\n"
	    "                         CONFIG (default %s); needs no daemon\n"
	    "  config                 the configuration the daemon runs with "
	    "(no\n"
	    "                         credential), as JSON\n"
	    "  config --from-options FILE [--credential-file PATH]\n"
	    "       [--mcp-credential-file PATH] [--control-socket PATH]\n"
	    "                         the rtsandboxd.json for FILE, a JSON "
	    "object of\n"
	    "                         pi-roundtable-sandbox 0.7.3 "
	    "PiSandboxRuntimeOptions,\n"
	    "                         on stdout; what the options cannot say "
	    "on stderr;\n"
	    "                         needs no daemon\n"
	    "\n"
	    "options:\n"
	    "  -s, --socket PATH      control socket (default %s,\n"
	    "                         or $RTSANDBOX_CONTROL_SOCKET)\n"
	    "  -j, --json             print results as JSON\n"
	    "  -h, --help             this text\n",
	    RTSANDBOX_CONFIG, RTSANDBOX_CONTROL_SOCKET);
}

static void
print_json(const cJSON *v)
{
	char	*s;

	if ((s = cJSON_Print(v)) == NULL) {
		fprintf(stderr, "rtsandboxctl: out of memory\n");
		exit(1);
	}
	printf("%s\n", s);
	free(s);
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static void
print_stats(const cJSON *res)
{
	const cJSON	*procs, *p, *cnt, *c;
	char		 label[320];

	printf("rtsandboxd %s, up %.0f s, %.0f broker(s)\n\n",
	    str(res, "version"), num(res, "uptime_s"), num(res, "brokers"));
	printf("%-32s %8s %-9s %9s %9s %9s %8s\n", "PROCESS", "PID", "STATE",
	    "RSS KiB", "PSS KiB", "USS KiB", "RESTARTS");
	procs = cJSON_GetObjectItemCaseSensitive(res, "processes");
	cJSON_ArrayForEach(p, procs) {
		if (*str(p, "name") != '\0')
			snprintf(label, sizeof(label), "%s[%s]", str(p, "role"),
			    str(p, "name"));
		else
			snprintf(label, sizeof(label), "%s", str(p, "role"));
		printf("%-32s %8.0f %-9s %9.0f %9.0f %9.0f %8.0f\n", label,
		    num(p, "pid"), str(p, "state"), num(p, "rss_kib"),
		    num(p, "pss_kib"), num(p, "uss_kib"), num(p, "restarts"));
	}
	cnt = cJSON_GetObjectItemCaseSensitive(res, "counters");
	printf("\n");
	cJSON_ArrayForEach(c, cnt)
		if (cJSON_IsNumber(c))
			printf("%-24s %.0f\n", c->string, c->valuedouble);
}

static int
cmd_stats(struct ctl_opts *o, int argc, char *argv[])
{
	struct rpc	*r;
	cJSON		*res;
	int		 code;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	if ((r = rpc_open(o->socket, NULL)) == NULL)
		return 1;
	res = rpc_call(r, "daemon.stats", NULL, &code);
	rpc_close(r);
	if (res == NULL)
		return 1;
	if (o->json)
		print_json(res);
	else
		print_stats(res);
	cJSON_Delete(res);
	return 0;
}

static int
cmd_call(struct ctl_opts *o, int argc, char *argv[])
{
	struct rpc	*r;
	cJSON		*params = NULL, *res;
	int		 code;

	if (argc < 2 || argc > 3) {
		usage(stderr);
		return 2;
	}
	if (argc == 3 && (params = cJSON_Parse(argv[2])) == NULL) {
		fprintf(stderr, "rtsandboxctl: PARAMS is not JSON\n");
		return 2;
	}
	if ((r = rpc_open(o->socket, NULL)) == NULL) {
		cJSON_Delete(params);
		return 1;
	}
	res = rpc_call(r, argv[1], params, &code);
	rpc_close(r);
	if (res == NULL)
		return 1;
	print_json(res);
	cJSON_Delete(res);
	return 0;
}

/* One request with {"channel": key} and maybe {"profile": p}; prints the
 * result as JSON or through show(). */
static int
channel_call(struct ctl_opts *o, const char *method, const char *key,
    const char *profile, void (*show)(const char *, const cJSON *))
{
	struct rpc	*r;
	cJSON		*params, *res;
	int		 code;

	if ((params = cJSON_CreateObject()) == NULL)
		return 1;
	if (key != NULL)
		cJSON_AddStringToObject(params, "channel", key);
	if (profile != NULL)
		cJSON_AddStringToObject(params, "profile", profile);
	if ((r = rpc_open(o->socket, NULL)) == NULL) {
		cJSON_Delete(params);
		return 1;
	}
	res = rpc_call(r, method, params, &code);
	rpc_close(r);
	if (res == NULL)
		return 1;
	if (o->json)
		print_json(res);
	else
		show(key, res);
	cJSON_Delete(res);
	return 0;
}

static void
show_status(const char *key, const cJSON *res)
{
	printf("channel %s: container %s", key, str(res, "state"));
	if (*str(res, "image") != '\0')
		printf(" (image %s, profile %s)", str(res, "image"),
		    str(res, "profile"));
	printf(", broker %s\n", str(res, "broker"));
}

static void
show_paths(const char *key, const cJSON *res)
{
	printf("sessions     %s\nattachments  %s\n", str(res, "sessions"),
	    str(res, "attachments"));
}

static void
show_stopped(const char *key, const cJSON *res)
{
	printf("channel %s stopped\n", key);
}

static void
show_fresh(const char *key, const cJSON *res)
{
	printf("channel %s: %.0f session file(s) archived%s%s\n", key,
	    num(res, "archived"), *str(res, "folder") ? " in archive/" : "",
	    str(res, "folder"));
}

static void
show_cancelled(const char *key, const cJSON *res)
{
	printf("channel %s: %s\n", key, cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(res, "cancelled")) ?
	    "turn cancelled" : "no turn was running");
}

static void
show_started(const char *key, const cJSON *res)
{
	printf("channel %s started\n", key);
}

static void
show_ps(const char *key, const cJSON *res)
{
	const cJSON	*c;

	printf("%-40s %-10s %-16s %s\n", "CONTAINER", "STATE", "PROFILE",
	    "CHANNEL");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(res,
	    "containers"))
		printf("%-40s %-10s %-16s %s\n", str(c, "name"),
		    str(c, "state"), str(c, "profile"), str(c, "channel"));
}

static int
cmd_channel(struct ctl_opts *o, int argc, char *argv[])
{
	static const struct {
		const char	*cmd, *method;
		void		(*show)(const char *, const cJSON *);
	} t[] = {
		{ "status",	"channel.status",	show_status },
		{ "paths",	"channel.paths",	show_paths },
		{ "stop",	"channel.stop",		show_stopped },
		{ "fresh",	"channel.fresh",	show_fresh },
	};
	size_t	 i;

	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(argv[0], t[i].cmd) == 0)
			return channel_call(o, t[i].method, argv[1], NULL,
			    t[i].show);
	return 2;
}

static int
cmd_start(struct ctl_opts *o, int argc, char *argv[])
{
	const char	*profile = "default";
	int		 ch;

	optind = 0;	/* glibc: start over after the global options */
	while ((ch = getopt(argc, argv, "p:")) != -1) {
		switch (ch) {
		case 'p':
			profile = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	return channel_call(o, "channel.start", argv[optind], profile,
	    show_started);
}

/* An image file as {"data": base64, "mimeType": ...}, by its suffix. */
static cJSON *
image_load(const char *path)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char	*dot = strrchr(path, '.'), *mime;
	unsigned char	*buf = NULL;
	char		*enc;
	size_t		 len = 0, cap = 0, i, j;
	ssize_t		 n;
	cJSON		*img;
	int		 fd;

	if (dot == NULL)
		mime = NULL;
	else if (strcasecmp(dot, ".png") == 0)
		mime = "image/png";
	else if (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0)
		mime = "image/jpeg";
	else if (strcasecmp(dot, ".webp") == 0)
		mime = "image/webp";
	else if (strcasecmp(dot, ".gif") == 0)
		mime = "image/gif";
	else
		mime = NULL;
	if (mime == NULL) {
		fprintf(stderr, "rtsandboxctl: %s: not a .png, .jpg, .webp or "
		    ".gif file\n", path);
		return NULL;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "rtsandboxctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - len < 65536) {
			unsigned char	*nb;

			cap = cap ? cap * 2 : 131072;
			if ((nb = realloc(buf, cap)) == NULL)
				goto fail;
			buf = nb;
		}
		if ((n = read(fd, buf + len, cap - len)) <= 0)
			break;
		len += n;
	}
	close(fd);
	if (n < 0)
		goto fail;
	if ((enc = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		goto fail;
	for (i = 0, j = 0; i < len; i += 3) {
		unsigned	 v = buf[i] << 16;

		if (i + 1 < len)
			v |= buf[i + 1] << 8;
		if (i + 2 < len)
			v |= buf[i + 2];
		enc[j++] = b64[(v >> 18) & 63];
		enc[j++] = b64[(v >> 12) & 63];
		enc[j++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		enc[j++] = i + 2 < len ? b64[v & 63] : '=';
	}
	enc[j] = '\0';
	free(buf);
	img = cJSON_CreateObject();
	cJSON_AddStringToObject(img, "data", enc);
	cJSON_AddStringToObject(img, "mimeType", mime);
	free(enc);
	return img;
 fail:
	fprintf(stderr, "rtsandboxctl: %s: cannot read\n", path);
	free(buf);
	return NULL;
}

static int
b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Save a reply file under dir, never over an existing one. */
static int
file_save(const char *dir, const char *name, const char *data)
{
	char		 path[4096];
	unsigned char	*out;
	size_t		 len = strlen(data), i, n = 0;
	unsigned	 acc = 0;
	int		 bits = 0, fd, v, rc = 0;

	if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0) {
		fprintf(stderr, "rtsandboxctl: refusing file name %s\n", name);
		return -1;
	}
	if ((out = malloc(len / 4 * 3 + 3)) == NULL)
		return -1;
	for (i = 0; i < len && data[i] != '='; i++) {
		if ((v = b64val((unsigned char)data[i])) < 0) {
			free(out);
			return -1;
		}
		acc = acc << 6 | v;
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[n++] = acc >> bits;
		}
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1 || write(fd, out, n) != (ssize_t)n) {
		fprintf(stderr, "rtsandboxctl: %s: %s\n", path,
		    strerror(errno));
		rc = -1;
	} else
		printf("saved %s (%zu bytes)\n", path, n);
	if (fd != -1)
		close(fd);
	free(out);
	return rc;
}

/* rtsandboxctl offers no host tools of its own: it says so. */
static void
answer_tool_call(struct rpc *r, const cJSON *m)
{
	cJSON	*a, *res;

	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "jsonrpc", "2.0");
	cJSON_AddItemToObject(a, "id", cJSON_Duplicate(
	    cJSON_GetObjectItemCaseSensitive(m, "id"), 1));
	res = cJSON_AddObjectToObject(a, "result");
	cJSON_AddFalseToObject(res, "ok");
	cJSON_AddStringToObject(res, "error",
	    "rtsandboxctl implements no host tools");
	rpc_write(r, a);
}

static int
cmd_turn(struct ctl_opts *o, int argc, char *argv[])
{
	static const char *const hooks[] = { "tool.call", NULL };
	static const char spin[] = "|/-\\";
	const char	*profile = "default", *author = "rtsandboxctl:operator";
	const char	*outdir = NULL, *thinking = NULL, *turn_id = NULL;
	const char	*phase = "sending", *colon;
	char		 idbuf[64], aid[257], aname[257];
	struct rpc	*r;
	cJSON		*p, *images, *img, *m, *res, *id, *f;
	double		 myid;
	int		 ch, tty = isatty(STDERR_FILENO), to, k = 0, rc = 1;

	if ((images = cJSON_CreateArray()) == NULL)
		return 1;
	static const struct option longopts[] = {
		{ "profile",	required_argument,	NULL, 'p' },
		{ "author",	required_argument,	NULL, 'a' },
		{ "image",	required_argument,	NULL, 'i' },
		{ "out",	required_argument,	NULL, 'o' },
		{ "thinking",	required_argument,	NULL, 't' },
		{ "turn-id",	required_argument,	NULL, 'n' },
		{ NULL,		0,			NULL, 0 }
	};

	optind = 0;	/* glibc: start over after the global options */
	while ((ch = getopt_long(argc, argv, "p:a:i:o:t:n:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'p':
			profile = optarg;
			break;
		case 'a':
			author = optarg;
			break;
		case 'i':
			if ((img = image_load(optarg)) == NULL) {
				cJSON_Delete(images);
				return 1;
			}
			cJSON_AddItemToArray(images, img);
			break;
		case 'o':
			outdir = optarg;
			break;
		case 't':
			thinking = optarg;
			break;
		case 'n':
			turn_id = optarg;
			break;
		default:
			cJSON_Delete(images);
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2 || (colon = strchr(author, ':')) == NULL ||
	    colon - author > 256 || strlen(colon + 1) > 256) {
		cJSON_Delete(images);
		usage(stderr);
		return 2;
	}
	snprintf(aid, sizeof(aid), "%.*s", (int)(colon - author), author);
	snprintf(aname, sizeof(aname), "%s", colon + 1);
	if (turn_id == NULL) {
		snprintf(idbuf, sizeof(idbuf), "ctl-%lld-%d",
		    (long long)time(NULL), (int)getpid());
		turn_id = idbuf;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "channel", argv[optind]);
	cJSON_AddStringToObject(p, "profile", profile);
	cJSON_AddStringToObject(p, "turnId", turn_id);
	f = cJSON_AddObjectToObject(p, "author");
	cJSON_AddStringToObject(f, "id", aid);
	cJSON_AddStringToObject(f, "name", aname);
	cJSON_AddStringToObject(p, "text", argv[optind + 1]);
	cJSON_AddItemToObject(p, "images", images);
	if (thinking != NULL)
		cJSON_AddStringToObject(p, "thinking", thinking);

	if ((r = rpc_open(o->socket, hooks)) == NULL) {
		cJSON_Delete(p);
		return 1;
	}
	if ((myid = rpc_send(r, "turn.run", p)) < 0)
		goto out;
	for (;;) {
		if (tty)
			fprintf(stderr, "\r%c %-24s", spin[k++ % 4], phase);
		if ((m = rpc_next(r, tty ? 100 : -1, &to)) == NULL) {
			if (to)
				continue;
			fprintf(stderr, "\nrtsandboxctl: connection lost\n");
			goto out;
		}
		id = cJSON_GetObjectItemCaseSensitive(m, "id");
		if (strcmp(str(m, "method"), "turn.progress") == 0) {
			static char	 last[32];

			snprintf(last, sizeof(last), "%s", str(
			    cJSON_GetObjectItemCaseSensitive(m, "params"),
			    "phase"));
			phase = last;
			if (!tty && !o->json)
				fprintf(stderr, "rtsandboxctl: %s\n", phase);
		} else if (strcmp(str(m, "method"), "tool.call") == 0)
			answer_tool_call(r, m);
		else if (cJSON_IsNumber(id) && id->valuedouble == myid) {
			if (tty)
				fprintf(stderr, "\r%-26s\r", "");
			break;
		}
		cJSON_Delete(m);
	}
	if ((res = cJSON_GetObjectItemCaseSensitive(m, "result")) == NULL) {
		fprintf(stderr, "rtsandboxctl: turn.run: %s\n", str(
		    cJSON_GetObjectItemCaseSensitive(m, "error"), "message"));
		cJSON_Delete(m);
		goto out;
	}
	if (o->json)
		print_json(res);
	else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok"))) {
		printf("%s\n", str(res, "text"));
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(res,
		    "files")) {
			if (outdir == NULL)
				printf("file %s (not saved: give -o DIR)\n",
				    str(f, "name"));
			else
				file_save(outdir, str(f, "name"),
				    str(f, "data"));
		}
	} else
		fprintf(stderr, "rtsandboxctl: turn failed (%s): %s%s%s\n",
		    str(res, "reason"), str(res, "message"),
		    *str(res, "workerError") ? ": " : "",
		    str(res, "workerError"));
	rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok")) ? 0 : 1;
	cJSON_Delete(m);
 out:
	rpc_close(r);
	return rc;
}

/* The whole of a small file, NUL-terminated; NULL after saying why. */
static char *
text_load(const char *path, size_t max)
{
	FILE	*f;
	char	*buf;
	size_t	 n;

	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "rtsandboxctl: %s: %s\n", path,
		    strerror(errno));
		return NULL;
	}
	if ((buf = malloc(max + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, max + 1, f);
	fclose(f);
	if (n > max) {
		fprintf(stderr, "rtsandboxctl: %s: more than %zu bytes\n",
		    path, max);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* search.query answered with the operator's file, whatever the query. */
static void
answer_search(struct rpc *r, const cJSON *m, const char *text)
{
	cJSON	*a, *res;

	a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "jsonrpc", "2.0");
	cJSON_AddItemToObject(a, "id", cJSON_Duplicate(
	    cJSON_GetObjectItemCaseSensitive(m, "id"), 1));
	res = cJSON_AddObjectToObject(a, "result");
	cJSON_AddStringToObject(res, "text", text);
	rpc_write(r, a);
}

static int
cmd_research(struct ctl_opts *o, int argc, char *argv[])
{
	static const char *const hooks[] = { "search.query", NULL };
	static const struct option longopts[] = {
		{ "author",	required_argument,	NULL, 'a' },
		{ "thinking",	required_argument,	NULL, 't' },
		{ "search-file", required_argument,	NULL, 's' },
		{ NULL,		0,			NULL, 0 }
	};
	const char	*author = "rtsandboxctl:operator", *thinking = NULL;
	const char	*colon;
	char		*search = NULL, aid[257], aname[257];
	struct rpc	*r;
	cJSON		*p, *f, *m, *res, *id;
	double		 myid;
	int		 ch, to, rc = 1;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "a:t:s:", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'a':
			author = optarg;
			break;
		case 't':
			thinking = optarg;
			break;
		case 's':
			free(search);
			if ((search = text_load(optarg, 400000)) == NULL)
				return 1;
			break;
		default:
			free(search);
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2 || (colon = strchr(author, ':')) == NULL ||
	    colon - author > 256 || strlen(colon + 1) > 256) {
		free(search);
		usage(stderr);
		return 2;
	}
	snprintf(aid, sizeof(aid), "%.*s", (int)(colon - author), author);
	snprintf(aname, sizeof(aname), "%s", colon + 1);
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "channel", argv[optind]);
	f = cJSON_AddObjectToObject(p, "author");
	cJSON_AddStringToObject(f, "id", aid);
	cJSON_AddStringToObject(f, "name", aname);
	cJSON_AddStringToObject(p, "task", argv[optind + 1]);
	if (thinking != NULL)
		cJSON_AddStringToObject(p, "thinking", thinking);
	if ((r = rpc_open(o->socket, search != NULL ? hooks : NULL)) ==
	    NULL) {
		cJSON_Delete(p);
		free(search);
		return 1;
	}
	if ((myid = rpc_send(r, "research.run", p)) < 0)
		goto out;
	for (;;) {
		if ((m = rpc_next(r, -1, &to)) == NULL) {
			fprintf(stderr, "rtsandboxctl: connection lost\n");
			goto out;
		}
		id = cJSON_GetObjectItemCaseSensitive(m, "id");
		if (strcmp(str(m, "method"), "search.query") == 0 &&
		    search != NULL) {
			if (!o->json)
				fprintf(stderr, "rtsandboxctl: search: %s\n",
				    str(cJSON_GetObjectItemCaseSensitive(m,
				    "params"), "query"));
			answer_search(r, m, search);
		} else if (cJSON_IsNumber(id) && id->valuedouble == myid)
			break;
		cJSON_Delete(m);
	}
	if ((res = cJSON_GetObjectItemCaseSensitive(m, "result")) == NULL) {
		fprintf(stderr, "rtsandboxctl: research.run: %s\n", str(
		    cJSON_GetObjectItemCaseSensitive(m, "error"), "message"));
		cJSON_Delete(m);
		goto out;
	}
	rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok")) ? 0 : 1;
	if (o->json)
		print_json(res);
	else if (rc == 0)
		printf("%s\n", str(res, "report"));
	else
		fprintf(stderr, "rtsandboxctl: research failed (%s): %s\n",
		    str(res, "reason"), str(res, "message"));
	cJSON_Delete(m);
 out:
	rpc_close(r);
	free(search);
	return rc;
}

/* --server NAME:TOOL[,TOOL...], added to servers. */
static int
precheck_server(cJSON *servers, const char *arg)
{
	const char	*colon = strchr(arg, ':'), *t, *end;
	cJSON		*o, *tools;
	char		 buf[257];

	if (colon == NULL || colon == arg || colon - arg > 256)
		return -1;
	snprintf(buf, sizeof(buf), "%.*s", (int)(colon - arg), arg);
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "name", buf) == NULL ||
	    (tools = cJSON_AddArrayToObject(o, "tools")) == NULL) {
		cJSON_Delete(o);
		return -1;
	}
	cJSON_AddItemToArray(servers, o);
	for (t = colon + 1; *t != '\0'; t = *end == ',' ? end + 1 : end) {
		end = t + strcspn(t, ",");
		if (end == t || end - t > 256)
			return -1;
		snprintf(buf, sizeof(buf), "%.*s", (int)(end - t), t);
		cJSON_AddItemToArray(tools, cJSON_CreateString(buf));
	}
	return 0;
}

static int
cmd_precheck(struct ctl_opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "server",	required_argument,	NULL, 's' },
		{ "time-zone",	required_argument,	NULL, 'z' },
		{ "title",	required_argument,	NULL, 't' },
		{ "id",		required_argument,	NULL, 'i' },
		{ NULL,		0,			NULL, 0 }
	};
	const char	*zone = "UTC", *title = "rtsandboxctl";
	char		*script, fired[32], today[16];
	struct rpc	*r;
	struct tm	 tm;
	time_t		 now = time(NULL);
	cJSON		*p, *servers, *sched, *res;
	long long	 id = 1;
	int		 ch, code, rc = 1;

	if ((servers = cJSON_CreateArray()) == NULL)
		return 1;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "s:z:t:i:", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 's':
			if (precheck_server(servers, optarg) == 0)
				break;
			fprintf(stderr, "rtsandboxctl: --server %s: not "
			    "NAME:TOOL[,TOOL...]\n", optarg);
			cJSON_Delete(servers);
			return 2;
		case 'z':
			zone = optarg;
			break;
		case 't':
			title = optarg;
			break;
		case 'i':
			id = strtoll(optarg, NULL, 10);
			break;
		default:
			cJSON_Delete(servers);
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 3) {
		cJSON_Delete(servers);
		usage(stderr);
		return 2;
	}
	if ((script = text_load(argv[optind + 2], 64 * 1024)) == NULL) {
		cJSON_Delete(servers);
		return 1;
	}
	gmtime_r(&now, &tm);
	strftime(fired, sizeof(fired), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	/* today in the zone of the run, as a schedule's host has it */
	setenv("TZ", zone, 1);
	tzset();
	localtime_r(&now, &tm);
	strftime(today, sizeof(today), "%Y-%m-%d", &tm);
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "channel", argv[optind]);
	cJSON_AddStringToObject(p, "profile", argv[optind + 1]);
	cJSON_AddStringToObject(p, "script", script);
	cJSON_AddStringToObject(p, "firedAt", fired);
	cJSON_AddStringToObject(p, "timeZone", zone);
	cJSON_AddStringToObject(p, "today", today);
	sched = cJSON_AddObjectToObject(p, "schedule");
	cJSON_AddNumberToObject(sched, "id", (double)id);
	cJSON_AddStringToObject(sched, "title", title);
	cJSON_AddItemToObject(p, "servers", servers);
	free(script);
	if ((r = rpc_open(o->socket, NULL)) == NULL) {
		cJSON_Delete(p);
		return 1;
	}
	if ((res = rpc_call(r, "precheck.run", p, &code)) != NULL) {
		rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res,
		    "ok")) ? 0 : 1;
		if (o->json || rc == 0)
			print_json(rc == 0 && !o->json ?
			    cJSON_GetObjectItemCaseSensitive(res, "result") :
			    res);
		else
			fprintf(stderr, "rtsandboxctl: precheck failed (%s): "
			    "%s\n", str(res, "reason"), str(res, "message"));
		cJSON_Delete(res);
	}
	rpc_close(r);
	return rc;
}

/* A URL; its name is the last segment of its path. */
static int
attach_add(cJSON *arr, const char *url)
{
	const char	*end, *slash;
	char		 name[1025];
	cJSON		*a;

	end = url + strcspn(url, "?#");
	for (slash = end; slash > url && slash[-1] != '/'; slash--)
		;
	if (end - slash >= (ptrdiff_t)sizeof(name))
		slash = end - (sizeof(name) - 1);
	snprintf(name, sizeof(name), "%.*s", (int)(end - slash), slash);
	if ((a = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(a, "url", url) == NULL ||
	    cJSON_AddStringToObject(a, "name", name) == NULL)
		return -1;
	cJSON_AddItemToArray(arr, a);
	return 0;
}

static void
show_attached(const char *key, const cJSON *res)
{
	const cJSON	*e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(res, "saved"))
		printf("saved %s (%.0f bytes)\n", str(e, "file"),
		    num(e, "size"));
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(res, "failed"))
		printf("failed %s%s: %s\n", cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(e, "reference")) ?
		    "reference " : "", str(e, "name"), str(e, "reason"));
}

static int
cmd_attach(struct ctl_opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "ref",	required_argument,	NULL, 'r' },
		{ NULL,		0,			NULL, 0 }
	};
	struct rpc	*r;
	cJSON		*p, *att, *ref = NULL, *res;
	int		 ch, code, i;

	p = cJSON_CreateObject();
	att = cJSON_CreateArray();
	optind = 0;
	while ((ch = getopt_long(argc, argv, "r:", longopts, NULL)) != -1) {
		if (ch != 'r') {
			usage(stderr);
			goto bad;
		}
		if (ref == NULL)
			ref = cJSON_CreateArray();
		if (attach_add(ref, optarg) == -1)
			goto bad;
	}
	if (argc - optind < 3) {
		usage(stderr);
		goto bad;
	}
	for (i = optind + 2; i < argc; i++)
		if (attach_add(att, argv[i]) == -1)
			goto bad;
	cJSON_AddStringToObject(p, "channel", argv[optind]);
	cJSON_AddStringToObject(p, "messageId", argv[optind + 1]);
	cJSON_AddItemToObject(p, "attachments", att);
	if (ref != NULL)
		cJSON_AddItemToObject(cJSON_AddObjectToObject(p, "reference"),
		    "attachments", ref);
	if ((r = rpc_open(o->socket, NULL)) == NULL) {
		cJSON_Delete(p);
		return 1;
	}
	res = rpc_call(r, "attachments.fetch", p, &code);
	rpc_close(r);
	if (res == NULL)
		return 1;
	if (o->json)
		print_json(res);
	else
		show_attached(argv[optind], res);
	code = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res,
	    "failed")) > 0;
	cJSON_Delete(res);
	return code;
 bad:
	cJSON_Delete(p);
	cJSON_Delete(att);
	cJSON_Delete(ref);
	return 2;
}

static int
cmd_cancel(struct ctl_opts *o, int argc, char *argv[])
{
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	return channel_call(o, "turn.cancel", argv[1], NULL, show_cancelled);
}

static int
cmd_ps(struct ctl_opts *o, int argc, char *argv[])
{
	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	return channel_call(o, "channel.list", NULL, NULL, show_ps);
}

static int
cmd_doctor(struct ctl_opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config",	required_argument,	NULL, 'f' },
		{ NULL,		0,			NULL, 0 }
	};
	const char	*path = RTSANDBOX_CONFIG;
	int		 ch;

	optind = 0;	/* glibc: start over after the global options */
	while ((ch = getopt_long(argc, argv, "f:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			path = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return doctor_run(path);
}

static int
cmd_config(struct ctl_opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "from-options",	required_argument,	NULL, 'o' },
		{ "credential-file",	required_argument,	NULL, 'c' },
		{ "mcp-credential-file", required_argument,	NULL, 'm' },
		{ "control-socket",	required_argument,	NULL, 'k' },
		{ NULL,			0,			NULL, 0 }
	};
	const char	*from = NULL, *cred = NULL, *mcp = NULL, *sock = NULL;
	struct rpc	*r;
	cJSON		*res;
	int		 ch, code;

	optind = 0;	/* glibc: start over after the global options */
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			from = optarg;
			break;
		case 'c':
			cred = optarg;
			break;
		case 'm':
			mcp = optarg;
			break;
		case 'k':
			sock = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (from == NULL && (cred != NULL || mcp != NULL ||
	    sock != NULL))) {
		usage(stderr);
		return 2;
	}
	if (from != NULL)
		return fromopts_run(from, cred, mcp, sock);
	if ((r = rpc_open(o->socket, NULL)) == NULL)
		return 1;
	res = rpc_call(r, "daemon.config", NULL, &code);
	rpc_close(r);
	if (res == NULL)
		return 1;
	print_json(res);
	cJSON_Delete(res);
	return 0;
}

static const struct {
	const char	*name;
	int		(*fn)(struct ctl_opts *, int, char *[]);
} commands[] = {
	{ "stats",	cmd_stats },
	{ "call",	cmd_call },
	{ "start",	cmd_start },
	{ "status",	cmd_channel },
	{ "paths",	cmd_channel },
	{ "stop",	cmd_channel },
	{ "fresh",	cmd_channel },
	{ "ps",		cmd_ps },
	{ "turn",	cmd_turn },
	{ "cancel",	cmd_cancel },
	{ "research",	cmd_research },
	{ "precheck",	cmd_precheck },
	{ "attach",	cmd_attach },
	{ "doctor",	cmd_doctor },
	{ "config",	cmd_config },
};

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "socket",	required_argument,	NULL, 's' },
		{ "json",	no_argument,		NULL, 'j' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL,		0,			NULL, 0 }
	};
	struct ctl_opts	 o;
	size_t		 i;
	int		 ch;

	memset(&o, 0, sizeof(o));
	if ((o.socket = getenv("RTSANDBOX_CONTROL_SOCKET")) == NULL)
		o.socket = RTSANDBOX_CONTROL_SOCKET;
	while ((ch = getopt_long(argc, argv, "+s:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			o.socket = optarg;
			break;
		case 'j':
			o.json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			return commands[i].fn(&o, argc, argv);
	fprintf(stderr, "rtsandboxctl: unknown command %s\n", argv[0]);
	usage(stderr);
	return 2;
}

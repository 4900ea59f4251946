/*
 * rtsandboxctl: the command-line client of rtsandboxd's control socket.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "buildconf.h"
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
	    "  call METHOD [PARAMS]   send one JSON-RPC request, print its "
	    "result\n"
	    "\n"
	    "options:\n"
	    "  -s, --socket PATH      control socket (default %s,\n"
	    "                         or $RTSANDBOX_CONTROL_SOCKET)\n"
	    "  -j, --json             print results as JSON\n"
	    "  -h, --help             this text\n",
	    RTSANDBOX_CONTROL_SOCKET);
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
	printf("%-32s %8s %-9s %9s %9s %8s\n", "PROCESS", "PID", "STATE",
	    "RSS KiB", "PSS KiB", "RESTARTS");
	procs = cJSON_GetObjectItemCaseSensitive(res, "processes");
	cJSON_ArrayForEach(p, procs) {
		if (*str(p, "name") != '\0')
			snprintf(label, sizeof(label), "%s[%s]", str(p, "role"),
			    str(p, "name"));
		else
			snprintf(label, sizeof(label), "%s", str(p, "role"));
		printf("%-32s %8.0f %-9s %9.0f %9.0f %8.0f\n", label,
		    num(p, "pid"), str(p, "state"), num(p, "rss_kib"),
		    num(p, "pss_kib"), num(p, "restarts"));
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

static int
cmd_ps(struct ctl_opts *o, int argc, char *argv[])
{
	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	return channel_call(o, "channel.list", NULL, NULL, show_ps);
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

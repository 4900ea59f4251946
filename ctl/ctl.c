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

static const struct {
	const char	*name;
	int		(*fn)(struct ctl_opts *, int, char *[]);
} commands[] = {
	{ "stats",	cmd_stats },
	{ "call",	cmd_call },
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

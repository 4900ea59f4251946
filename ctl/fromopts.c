/*
 * rtsandboxctl config --from-options: the rtsandboxd.json that stands in
 * for a bot's pi-roundtable-sandbox 0.7.3 PiSandboxRuntimeOptions.  The
 * options that a JSON file can hold are moved to their fields, what they
 * cannot say (the control socket, the credential files) gets a default or
 * a path the operator fills, said on stderr, and the result goes through
 * the daemon's own parser: an error names the option it came from.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buildconf.h"
#include "config.h"
#include "fromopts.h"

/* An options file is small; the configuration's own bound will do. */
#define OPTS_FILE_MAX		CONFIG_FILE_MAX

#define DEFAULT_CREDENTIAL	"/etc/rtsandbox/upstream.token"
#define DEFAULT_MCP_CREDENTIAL	"/etc/rtsandbox/mcp.token"

/* Where each field of the configuration came from, for its errors. */
static const struct {
	const char	*field;
	const char	*option;
} fo_names[] = {
	{ "state_dir",			"partyDir" },
	{ "control_socket",		"--control-socket" },
	{ "image",			"image" },
	{ "profiles",			"profiles" },
	{ "upstream.url",		"upstream" },
	{ "upstream.credential_file",	"--credential-file" },
	{ "mcp.servers",		"mcp.servers" },
	{ "mcp.allow_http",		"allowHttpMcp" },
	{ "mcp.credential_file",	"--mcp-credential-file" },
	{ "tools",			"tools.names" },
	{ "docker.container_prefix",	"containerPrefix" },
	{ "docker.label_channel",	"labelChannel" },
	{ "docker.label_profile",	"labelProfile" },
	{ "time_zone",			"timeZone" },
	{ "timeouts.start_ms",		"startTimeoutMs" },
	{ "timeouts.turn_ms",		"turnTimeoutMs" },
	{ "budgets.max_calls",		"maxCalls" },
	{ "budgets.max_output_tokens",	"maxOutputTokens" },
};

/* The options that become a field: name, and the path it goes to. */
static const struct {
	const char	*option;
	const char	*object;	/* NULL: top level */
	const char	*field;
} fo_moves[] = {
	{ "partyDir",		NULL,		"state_dir" },
	{ "image",		NULL,		"image" },
	{ "profiles",		NULL,		"profiles" },
	{ "timeZone",		NULL,		"time_zone" },
	{ "containerPrefix",	"docker",	"container_prefix" },
	{ "labelChannel",	"docker",	"label_channel" },
	{ "labelProfile",	"docker",	"label_profile" },
	{ "startTimeoutMs",	"timeouts",	"start_ms" },
	{ "turnTimeoutMs",	"timeouts",	"turn_ms" },
	{ "maxCalls",		"budgets",	"max_calls" },
	{ "maxOutputTokens",	"budgets",	"max_output_tokens" },
};

/* The callbacks of the options: the client serves them as hooks. */
static const struct {
	const char	*option;
	const char	*served;
} fo_callbacks[] = {
	{ "memory",	"the client's memory.block hook" },
	{ "effort",	"the client's effort.judge hook" },
	{ "logger",	"the client" },
};

/* The order of rtsandboxd.conf(5), for the file written. */
static const char *const fo_order[] = {
	"state_dir", "control_socket", "image", "profiles", "upstream", "mcp",
	"tools", "docker", "time_zone", "timeouts", "budgets",
};

static int	fo_error(const char *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	fo_note(const char *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static int
fo_error(const char *option, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "rtsandboxctl: %s: ", option);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return -1;
}

static void
fo_note(const char *field, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "rtsandboxctl: note: %s: ", field);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/* "field: rule" of the configuration, as "option: rule". */
static void
fo_print_line(const char *kind, const char *line)
{
	size_t	 i, n;

	for (i = 0; i < sizeof(fo_names) / sizeof(fo_names[0]); i++) {
		n = strlen(fo_names[i].field);
		if (strncmp(line, fo_names[i].field, n) == 0 &&
		    (line[n] == ':' || line[n] == '.' || line[n] == '[')) {
			fprintf(stderr, "rtsandboxctl: %s%s%s\n", kind,
			    fo_names[i].option, line + n);
			return;
		}
	}
	fprintf(stderr, "rtsandboxctl: %s%s\n", kind, line);
}

static cJSON *
fo_object(cJSON *conf, const char *name)
{
	cJSON	*o;

	if ((o = cJSON_GetObjectItemCaseSensitive(conf, name)) != NULL)
		return o;
	if ((o = cJSON_AddObjectToObject(conf, name)) == NULL) {
		fprintf(stderr, "rtsandboxctl: out of memory\n");
		exit(1);
	}
	return o;
}

/* Move a copy of v to conf[object][field]. */
static void
fo_put(cJSON *conf, const char *object, const char *field, const cJSON *v)
{
	cJSON	*dst = object != NULL ? fo_object(conf, object) : conf;
	cJSON	*copy;

	if ((copy = cJSON_Duplicate(v, 1)) == NULL ||
	    !cJSON_AddItemToObject(dst, field, copy)) {
		fprintf(stderr, "rtsandboxctl: out of memory\n");
		exit(1);
	}
}

static char *
fo_read(const char *path)
{
	struct stat	 st;
	char		*buf;
	size_t		 len = 0;
	ssize_t		 r;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) ==
	    -1 || fstat(fd, &st) == -1) {
		fprintf(stderr, "rtsandboxctl: %s: %s\n", path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)OPTS_FILE_MAX) {
		fprintf(stderr, "rtsandboxctl: %s: not a regular file of at "
		    "most %u bytes\n", path, OPTS_FILE_MAX);
		close(fd);
		return NULL;
	}
	if ((buf = malloc(OPTS_FILE_MAX + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (len <= OPTS_FILE_MAX) {
		r = read(fd, buf + len, OPTS_FILE_MAX + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (len > OPTS_FILE_MAX) {
		fprintf(stderr, "rtsandboxctl: %s: larger than %u bytes\n",
		    path, OPTS_FILE_MAX);
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* tools: {names, call} as 0.7.3 has it. */
static int
fo_tools(cJSON *conf, const cJSON *v)
{
	const cJSON	*it, *names = NULL;

	if (!cJSON_IsObject(v))
		return fo_error("tools", "must be {\"names\": [...]}, as "
		    "PiSandboxRuntime 0.7.3 has it");
	cJSON_ArrayForEach(it, v) {
		if (strcmp(it->string, "names") == 0)
			names = it;
		else if (strcmp(it->string, "call") == 0)
			fo_note("tools.call", "served by the client's "
			    "tool.call hook; left out");
		else
			return fo_error("tools", "unknown member \"%.64s\"",
			    it->string);
	}
	if (names != NULL)
		fo_put(conf, NULL, "tools", names);
	return 0;
}

/* mcp: {servers, token}; the token is a credential. */
static int
fo_mcp(cJSON *conf, const cJSON *v)
{
	const cJSON	*it;
	int		 rc = 0;

	if (!cJSON_IsObject(v))
		return fo_error("mcp", "must be {\"servers\": [...]}");
	cJSON_ArrayForEach(it, v) {
		if (strcmp(it->string, "servers") == 0)
			fo_put(conf, "mcp", "servers", it);
		else if (strcmp(it->string, "token") == 0)
			rc = fo_error("mcp.token", "refused: a credential is "
			    "never written into the configuration; put the MCP "
			    "token in a file of the service user, mode 0600, "
			    "and name it with --mcp-credential-file");
		else
			rc = fo_error("mcp", "unknown member \"%.64s\"",
			    it->string);
	}
	return rc;
}

static int
fo_option(cJSON *conf, const cJSON *it)
{
	const char	*k = it->string;
	size_t		 i;

	for (i = 0; i < sizeof(fo_moves) / sizeof(fo_moves[0]); i++)
		if (strcmp(k, fo_moves[i].option) == 0) {
			fo_put(conf, fo_moves[i].object, fo_moves[i].field, it);
			return 0;
		}
	for (i = 0; i < sizeof(fo_callbacks) / sizeof(fo_callbacks[0]); i++)
		if (strcmp(k, fo_callbacks[i].option) == 0) {
			fo_note(k, "served by %s; left out",
			    fo_callbacks[i].served);
			return 0;
		}
	if (strcmp(k, "upstream") == 0) {
		fo_put(conf, "upstream", "url", it);
		return 0;
	}
	if (strcmp(k, "allowHttpMcp") == 0) {
		fo_put(conf, "mcp", "allow_http", it);
		return 0;
	}
	if (strcmp(k, "tools") == 0)
		return fo_tools(conf, it);
	if (strcmp(k, "mcp") == 0)
		return fo_mcp(conf, it);
	if (strcmp(k, "driver") == 0)
		return fo_error(k, "refused: rtsandboxd drives the container "
		    "engine itself, through its Docker client (docker.socket, "
		    "docker.runtime in rtsandboxd.conf(5)); a "
		    "PiContainerDriver of the bot's cannot stand in for it");
	if (strcmp(k, "fetchImpl") == 0)
		return fo_error(k, "refused: every upstream call leaves "
		    "through rtsandboxd's egress, which adds the credential "
		    "outside the container; a fetch of the bot's cannot stand "
		    "in for it (a private CA is upstream.ca_file in "
		    "rtsandboxd.conf(5))");
	if (strcmp(k, "oauthToken") == 0)
		return fo_error(k, "refused: a credential is never written "
		    "into the configuration; put the token in a file of the "
		    "service user, mode 0600, and name it with "
		    "--credential-file");
	return fo_error(k, "not an option of PiSandboxRuntime 0.7.3 that a "
	    "configuration holds");
}

int
fromopts_run(const char *path, const char *credential,
    const char *mcp_credential, const char *control_socket)
{
	struct config_errors	 errs;
	struct config		*cfg;
	cJSON			*opts, *conf, *sorted, *it, *up, *mcp;
	char			*buf, *out;
	size_t			 i;
	int			 rc = 0;

	if ((buf = fo_read(path)) == NULL)
		return 1;
	opts = cJSON_Parse(buf);
	free(buf);
	if (!cJSON_IsObject(opts)) {
		fprintf(stderr, "rtsandboxctl: %s: not a JSON object of "
		    "PiSandboxRuntime options\n", path);
		cJSON_Delete(opts);
		return 1;
	}
	if ((conf = cJSON_CreateObject()) == NULL)
		return 1;
	cJSON_AddStringToObject(conf, "control_socket", control_socket != NULL ?
	    control_socket : RTSANDBOX_CONTROL_SOCKET);
	cJSON_ArrayForEach(it, opts)
		if (fo_option(conf, it) == -1)
			rc = 1;
	cJSON_Delete(opts);

	up = fo_object(conf, "upstream");
	cJSON_AddStringToObject(up, "credential_file", credential != NULL ?
	    credential : DEFAULT_CREDENTIAL);
	mcp = cJSON_GetObjectItemCaseSensitive(conf, "mcp");
	if (mcp != NULL && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
	    mcp, "servers")) > 0)
		cJSON_AddStringToObject(mcp, "credential_file",
		    mcp_credential != NULL ? mcp_credential :
		    DEFAULT_MCP_CREDENTIAL);
	else if (mcp_credential != NULL)
		cJSON_AddStringToObject(fo_object(conf, "mcp"),
		    "credential_file", mcp_credential);
	/* the order of rtsandboxd.conf(5) */
	if ((sorted = cJSON_CreateObject()) == NULL)
		return 1;
	for (i = 0; i < sizeof(fo_order) / sizeof(fo_order[0]); i++)
		if ((it = cJSON_DetachItemFromObjectCaseSensitive(conf,
		    fo_order[i])) != NULL)
			cJSON_AddItemToObject(sorted, fo_order[i], it);
	cJSON_Delete(conf);
	conf = sorted;

	if ((out = cJSON_Print(conf)) == NULL) {
		cJSON_Delete(conf);
		return 1;
	}
	memset(&errs, 0, sizeof(errs));
	cfg = config_parse(out, strlen(out), &errs);
	for (i = 0; i < errs.nwarn; i++)
		fo_print_line("warning: ", errs.warnings[i]);
	for (i = 0; i < errs.n; i++)
		fo_print_line("", errs.lines[i]);
	config_errors_free(&errs);
	/* every problem is told, those of the options refused first */
	if (cfg == NULL || rc != 0) {
		config_free(cfg);
		free(out);
		cJSON_Delete(conf);
		return 1;
	}
	printf("%s\n", out);
	if (control_socket == NULL)
		fo_note("control_socket", "%s, the default; the client's "
		    "socket option names the same path (or --control-socket)",
		    RTSANDBOX_CONTROL_SOCKET);
	if (credential == NULL)
		fo_note("upstream.credential_file", "%s: write there the token "
		    "oauthToken() gave, owned by the service user, mode 0600, "
		    "or give its path with --credential-file",
		    DEFAULT_CREDENTIAL);
	if (cfg->nmcp_servers > 0 && mcp_credential == NULL)
		fo_note("mcp.credential_file", "%s: write there the token "
		    "mcp.token() gave, owned by the service user, mode 0600, "
		    "or give its path with --mcp-credential-file",
		    DEFAULT_MCP_CREDENTIAL);
	fo_note("bot_group", "not set: set it to the bot's group when the "
	    "bot reads sessionsDir() or writes attachmentDir() itself as a "
	    "user other than the service user");
	config_free(cfg);
	free(out);
	cJSON_Delete(conf);
	return 0;
}

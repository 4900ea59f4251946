/*
 * Configuration file of DESIGN.md 7.  Every field is checked and every
 * problem reported, "<field>: <rule>", so that one run of rtsandboxd -n
 * shows all of them.  Nothing here touches the file system except
 * config_load() and the group lookup; the state directory's owner, mode
 * and links are the file guard's to check.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buildconf.h"
#include "cfgcheck.h"
#include "compaction.h"
#include "config.h"
#include "limits.h"
#include "validate.h"

/* Limits of the file itself, beyond those common/limits.h quotes. */
#define PROFILES_MAX		64u
#define MCP_SERVERS_MAX		32u
#define MCP_TOOLS_MAX		128u
#define HOST_TOOLS_MAX		64u
#define MODEL_MAX		256u	/* bytes */
#define PATH_BYTES_MAX		4096u
#define URL_MAX			2048u
#define IMAGE_MAX		1024u
#define LABEL_MAX		128u
#define TIME_ZONE_MAX		64u
#define GROUP_NAME_MAX		32u
#define MEMORY_MIB_MIN		64u
#define MEMORY_MIB_MAX		65536u
#define PIDS_MIN		16u
#define PIDS_MAX		65536u
#define CPUS_MIN		0.01
#define CPUS_MAX		64.0
/* getgrnam_r() buffers grow up to this before giving up. */
#define GROUP_BUF_MAX		(1024u * 1024u)

#define SUN_PATH_MAX	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
#define BROKER_SOCK_SUFFIX	"/run/broker.sock"

#define DEFAULT_CONTROL_SOCKET	"/run/rtsandbox/control.sock"
#define DEFAULT_UPSTREAM_URL	"https://api.anthropic.com"
#define DEFAULT_DOCKER_SOCKET	"/var/run/docker.sock"
#define DEFAULT_PREFIX		"roundtable-sandbox"
#define DEFAULT_LABEL_CHANNEL	"roundtable.sandbox.channel"
#define DEFAULT_LABEL_PROFILE	"roundtable.sandbox.profile"
#define DEFAULT_TIME_ZONE	"UTC"
#define DEFAULT_THINKING	"low"

static void
parse_state_dir(struct cctx *c, struct config *cfg, const cJSON *it)
{
	const char	*s;
	size_t		 seg;

	if (it == NULL) {
		cerr(c, "state_dir", "is required");
		return;
	}
	if ((s = abs_path(c, it, "state_dir", PATH_BYTES_MAX)) == NULL)
		return;
	if (strcmp(s, "/") == 0) {
		cerr(c, "state_dir", "must not be \"/\"");
		return;
	}
	if (!canonical_path(s)) {
		cerr(c, "state_dir", "must be in canonical form: no \"//\", "
		    "no \".\" or \"..\" component, no trailing \"/\"");
		return;
	}
	/* Bind sources of PROTOCOL.md 7 may not hold these. */
	if (strpbrk(s, ":,") != NULL) {
		cerr(c, "state_dir", "must not contain \":\" or \",\" "
		    "(it is part of the container's bind sources)");
		return;
	}
	cfg->state_dir = xstrdup(c, s);
	if (cfg->state_dir == NULL)
		return;
	seg = config_max_segment_len(cfg);
	if (seg < CONFIG_SEGMENT_WARN)
		cwarn(c, "state_dir", "leaves room for channel segments of "
		    "only %zu chars in <state_dir>/<segment>%s (at most %u "
		    "chars); channels with longer segments cannot be started",
		    seg, BROKER_SOCK_SUFFIX, BROKER_SOCK_PATH_MAX);
}

/* Off once the supervisor is confined: see config_no_lookups(). */
static int	config_lookups = 1;

void
config_no_lookups(void)
{
	config_lookups = 0;
}

/*
 * A group of the host named by field: its name stored in *name and its
 * gid in *gid (CONFIG_GID_UNKNOWN when lookups are off); 0, or -1 after
 * an error.
 */
static int
group_value(struct cctx *c, const cJSON *it, const char *field, char **name,
    gid_t *gid)
{
	const char	*s;
	char		 q[QUOTE_MAX * 4 + 8];
	struct group	 gr, *res;
	char		*buf;
	size_t		 len, i, bufsz = 1024;
	long		 sz;
	int		 e;

	if ((s = str_value(c, it, field, &len)) == NULL)
		return -1;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
		    (i > 0 && ((s[i] >= '0' && s[i] <= '9') || s[i] == '-'))))
			break;
	if (len == 0 || len > GROUP_NAME_MAX || i < len) {
		cerr(c, field,
		    "must be a group name matching [a-z_][a-z0-9_-]{0,31}");
		return -1;
	}
	if (!config_lookups) {
		*gid = CONFIG_GID_UNKNOWN;
		*name = xstrdup(c, s);
		return 0;
	}
	if ((sz = sysconf(_SC_GETGR_R_SIZE_MAX)) > 0)
		bufsz = (size_t)sz;
	for (;;) {
		if ((buf = malloc(bufsz)) == NULL) {
			c->nomem = 1;
			return -1;
		}
		e = getgrnam_r(s, &gr, buf, bufsz, &res);
		if (e != ERANGE || bufsz >= GROUP_BUF_MAX)
			break;
		free(buf);
		bufsz *= 2;
	}
	if (res != NULL) {
		*gid = gr.gr_gid;
		*name = xstrdup(c, s);
	} else {
		quote(q, sizeof(q), s);
		/* getgrnam_r(3) lets these mean "no such group" too. */
		if (e == 0 || e == ENOENT || e == ESRCH || e == EBADF ||
		    e == EPERM)
			cerr(c, field, "no such group \"%s\"", q);
		else
			cerr(c, field, "cannot look up group \"%s\": %s", q,
			    strerror(e));
	}
	free(buf);
	return res != NULL ? 0 : -1;
}

static void
parse_control(struct cctx *c, struct config *cfg, const cJSON *sock,
    const cJSON *group)
{
	const char	*s = DEFAULT_CONTROL_SOCKET;

	if (sock != NULL)
		s = abs_path(c, sock, "control_socket", SUN_PATH_MAX);
	if (s != NULL)
		cfg->control_socket = xstrdup(c, s);
	if (group != NULL && group_value(c, group, "control_group",
	    &cfg->control_group, &cfg->control_gid) == 0)
		cfg->has_control_group = 1;
}

/*
 * The group of the chat bot's own user, given search on the way to each
 * channel's sessions/ and attachments/ and read (and write) in them; the
 * file guard grants it with POSIX ACLs.  Never root's group.
 */
static void
parse_bot_group(struct cctx *c, struct config *cfg, const cJSON *it)
{
	if (it == NULL || group_value(c, it, "bot_group", &cfg->bot_group,
	    &cfg->bot_gid) == -1)
		return;
	if (cfg->bot_gid == 0) {
		cerr(c, "bot_group", "must not be a group of gid 0");
		free(cfg->bot_group);
		cfg->bot_group = NULL;
		return;
	}
	cfg->has_bot_group = 1;
}

static void
parse_image(struct cctx *c, struct config *cfg, const cJSON *it)
{
	const char	*s;
	size_t		 len;

	if (it == NULL) {
		cerr(c, "image", "is required");
		return;
	}
	if ((s = str_value(c, it, "image", &len)) == NULL)
		return;
	if (len > IMAGE_MAX || !valid_image_name(s, len)) {
		cerr(c, "image", "must be an image name of 1 to %u bytes "
		    "without white space or control characters, not starting "
		    "with \"-\"", IMAGE_MAX);
		return;
	}
	cfg->image = xstrdup(c, s);
}

/*
 * URLs of the upstream (https, origin only) and of MCP servers (a path and
 * query allowed; http when allow_http).  Returns NULL when the URL is
 * acceptable, else the rule it breaks.  *keep is the length to store: the
 * upstream's "/" path is dropped so that paths append to it.
 */
static const char *
url_check(const char *s, size_t len, int mcp, int allow_http, size_t *keep)
{
	const char	*p, *auth, *end, *host_end;
	unsigned long	 port;
	size_t		 i;

	if (len > URL_MAX)
		return "must be at most 2048 bytes";
	if (strncmp(s, "https://", 8) == 0)
		auth = s + 8;
	else if (mcp && allow_http && strncmp(s, "http://", 7) == 0)
		auth = s + 7;
	else if (!mcp)
		return "must be an https URL";
	else if (allow_http)
		return "must be an http or https URL";
	else
		return "must be an https URL (http needs mcp.allow_http)";
	for (i = 0; i < len; i++) {
		/* Anything else must be percent-encoded in a URL. */
		if ((unsigned char)s[i] <= 0x20 ||
		    (unsigned char)s[i] >= 0x7f ||
		    strchr("\"<>\\^`{|}", s[i]) != NULL)
			return "must contain only printable ASCII characters "
			    "allowed in a URL";
		if (s[i] == '%' && (i + 2 >= len || hex_digit(s[i + 1]) == -1 ||
		    hex_digit(s[i + 2]) == -1))
			return "must use \"%\" only in percent-escapes";
	}
	if (strchr(s, '#') != NULL)
		return "must not have a fragment";
	end = auth + strcspn(auth, "/?");
	if (memchr(auth, '@', end - auth) != NULL)
		return "must not contain user info";
	if (*auth == '[') {
		host_end = memchr(auth, ']', end - auth);
		if (host_end == NULL || host_end == auth + 1)
			return "must have a host";
		for (p = auth + 1; p < host_end; p++)
			if (hex_digit(*p) == -1 && *p != ':' && *p != '.')
				return "must have a valid host";
		host_end++;
	} else {
		host_end = auth + strcspn(auth, ":/?");
		if (host_end == auth)
			return "must have a host";
		for (p = auth; p < host_end; p++)
			if (!((*p >= 'a' && *p <= 'z') ||
			    (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || *p == '-' ||
			    *p == '.' || *p == '_'))
				return "must have a valid host";
	}
	if (host_end < end) {
		if (*host_end != ':' || host_end + 1 == end ||
		    end - host_end - 1 > 5)
			return "must have a port from 1 to 65535";
		port = 0;
		for (p = host_end + 1; p < end; p++) {
			if (!is_digit(*p))
				return "must have a port from 1 to 65535";
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port < 1 || port > 65535)
			return "must have a port from 1 to 65535";
	}
	*keep = len;
	if (mcp)
		return NULL;
	if (strchr(end, '?') != NULL)
		return "must not have a query";
	if (*end != '\0' && strcmp(end, "/") != 0)
		return "must have no path (other than \"/\")";
	*keep = (size_t)(end - s);
	return NULL;
}

static char *
url_value(struct cctx *c, const cJSON *it, const char *path, int mcp,
    int allow_http)
{
	const char	*s, *why;
	char		*u;
	size_t		 len, keep;

	if ((s = str_value(c, it, path, &len)) == NULL)
		return NULL;
	if ((why = url_check(s, len, mcp, allow_http, &keep)) != NULL) {
		cerr(c, path, "%s", why);
		return NULL;
	}
	if ((u = strndup(s, keep)) == NULL)
		c->nomem = 1;
	return u;
}

enum { UP_URL, UP_CRED, UP_HOOK, UP_CA, UP_CREDS, UP_N };
static const char *const up_names[UP_N] = {
	"url", "credential_file", "credential", "ca_file", "credentials"
};

/*
 * Where a credential comes from: a file (credential_file), or the client
 * that declared the credential.get hook, asked for each call (credential
 * "hook").  One of the two; *hook is set for the second.
 */
static void
cred_source(struct cctx *c, const cJSON *file, const cJSON *src,
    const char *section, int required, char **path, int *hook)
{
	char		 pf[FIELD_PATH_MAX], ps[FIELD_PATH_MAX];
	const char	*s;

	snprintf(pf, sizeof(pf), "%s.credential_file", section);
	snprintf(ps, sizeof(ps), "%s.credential", section);
	if (src != NULL) {
		if (!cJSON_IsString(src) ||
		    strcmp(src->valuestring, "hook") != 0)
			cerr(c, ps, "must be \"hook\" (a file is named by %s)",
			    pf);
		else if (file != NULL)
			cerr(c, ps, "\"hook\" and %s are exclusive: the "
			    "credential comes from one of them", pf);
		else
			*hook = 1;
		return;
	}
	if (file == NULL) {
		if (required)
			cerr(c, pf, "is required (or %s: \"hook\")", ps);
		return;
	}
	if ((s = abs_path(c, file, pf, PATH_BYTES_MAX)) != NULL)
		*path = xstrdup(c, s);
}

static void
parse_upstream(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[UP_N];
	const char	*s;

	if (obj == NULL) {
		cerr(c, "upstream", "is required (at least credential_file "
		    "or credential)");
		return;
	}
	if (!is_object(c, obj, "upstream"))
		return;
	members(c, obj, "upstream", up_names, f, UP_N);
	if (f[UP_URL] == NULL)
		cfg->upstream_url = xstrdup(c, DEFAULT_UPSTREAM_URL);
	else
		cfg->upstream_url = url_value(c, f[UP_URL], "upstream.url",
		    0, 0);
	config_parse_credentials(c, cfg, f[UP_CREDS]);
	/* With upstream.credentials, the file may be left out (fallback
	 * "none"): config_check_credentials() says when it may not. */
	cred_source(c, f[UP_CRED], f[UP_HOOK], "upstream",
	    !cfg->has_credentials, &cfg->upstream_credential_file,
	    &cfg->upstream_credential_hook);
	config_check_credentials(c, cfg);
	if (f[UP_CA] != NULL && (s = abs_path(c, f[UP_CA], "upstream.ca_file",
	    PATH_BYTES_MAX)) != NULL)
		cfg->upstream_ca_file = xstrdup(c, s);
}

/*
 * An array of at most max distinct names that valid() accepts; rule is
 * the pattern for the message.  Returns the count stored in *out, which
 * has room for max names.
 */
static size_t
name_list(struct cctx *c, const cJSON *arr, const char *path, size_t max,
    int (*valid)(const char *, size_t), const char *rule, char ***out)
{
	const cJSON	*it;
	const char	*s;
	char		 p[FIELD_PATH_MAX], q[QUOTE_MAX * 4 + 8];
	char		**names;
	size_t		 i, j, len, n = 0;

	*out = NULL;
	if (!cJSON_IsArray(arr)) {
		cerr(c, path, "must be an array");
		return 0;
	}
	if ((size_t)cJSON_GetArraySize(arr) > max) {
		cerr(c, path, "must have at most %zu entries", max);
		return 0;
	}
	if ((names = calloc(max + 1, sizeof(*names))) == NULL) {
		c->nomem = 1;
		return 0;
	}
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		path_index(p, sizeof(p), path, i++);
		if ((s = str_value(c, it, p, &len)) == NULL)
			continue;
		if (!valid(s, len)) {
			cerr(c, p, "must match %s", rule);
			continue;
		}
		for (j = 0; j < n; j++)
			if (strcmp(names[j], s) == 0)
				break;
		if (j < n) {
			quote(q, sizeof(q), s);
			cerr(c, p, "duplicate name \"%s\"", q);
			continue;
		}
		if ((names[n] = xstrdup(c, s)) != NULL)
			n++;
	}
	*out = names;
	return n;
}

enum { SRV_NAME, SRV_URL, SRV_TOOLS, SRV_N };
static const char *const srv_names[SRV_N] = { "name", "url", "tools" };

static void
parse_server(struct cctx *c, struct config *cfg, const cJSON *obj,
    const char *path, struct config_mcp_server *srv)
{
	const cJSON	*f[SRV_N];
	const char	*s;
	char		 p[FIELD_PATH_MAX], q[QUOTE_MAX * 4 + 8];
	size_t		 len, j;

	if (!is_object(c, obj, path))
		return;
	members(c, obj, path, srv_names, f, SRV_N);
	path_key(p, sizeof(p), path, "name");
	if (f[SRV_NAME] == NULL)
		cerr(c, p, "is required");
	else if ((s = str_value(c, f[SRV_NAME], p, &len)) != NULL) {
		for (j = 0; j < cfg->nmcp_servers; j++)
			if (cfg->mcp_servers[j].name != NULL &&
			    strcmp(cfg->mcp_servers[j].name, s) == 0)
				break;
		quote(q, sizeof(q), s);
		if (!valid_mcp_server_name(s, len))
			cerr(c, p, "must match [a-zA-Z0-9_-]{1,100}");
		else if (j < cfg->nmcp_servers)
			cerr(c, p, "duplicate server name \"%s\"", q);
		else
			srv->name = xstrdup(c, s);
	}
	path_key(p, sizeof(p), path, "url");
	if (f[SRV_URL] == NULL)
		cerr(c, p, "is required");
	else
		srv->url = url_value(c, f[SRV_URL], p, 1, cfg->mcp_allow_http);
	path_key(p, sizeof(p), path, "tools");
	if (f[SRV_TOOLS] == NULL)
		cerr(c, p, "is required (it may be empty)");
	else
		srv->ntools = name_list(c, f[SRV_TOOLS], p, MCP_TOOLS_MAX,
		    valid_tool_use_name, "[a-zA-Z0-9_-]{1,128}", &srv->tools);
}

enum { MCP_SERVERS, MCP_CRED, MCP_HOOK, MCP_HTTP, MCP_N };
static const char *const mcp_names[MCP_N] = {
	"servers", "credential_file", "credential", "allow_http"
};

static void
parse_mcp(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[MCP_N], *it;
	char		 p[FIELD_PATH_MAX];
	size_t		 n, i;

	if (obj == NULL || !is_object(c, obj, "mcp"))
		return;
	members(c, obj, "mcp", mcp_names, f, MCP_N);
	bool_value(c, f[MCP_HTTP], "mcp.allow_http", &cfg->mcp_allow_http);
	cred_source(c, f[MCP_CRED], f[MCP_HOOK], "mcp", 0,
	    &cfg->mcp_credential_file, &cfg->mcp_credential_hook);
	if (f[MCP_SERVERS] == NULL)
		return;
	if (!cJSON_IsArray(f[MCP_SERVERS])) {
		cerr(c, "mcp.servers", "must be an array");
		return;
	}
	n = (size_t)cJSON_GetArraySize(f[MCP_SERVERS]);
	if (n > MCP_SERVERS_MAX) {
		cerr(c, "mcp.servers", "must have at most %u servers",
		    MCP_SERVERS_MAX);
		return;
	}
	if (n > 0 && f[MCP_CRED] == NULL && f[MCP_HOOK] == NULL)
		cerr(c, "mcp.credential_file",
		    "is required when mcp.servers is not empty (or "
		    "mcp.credential: \"hook\")");
	if (n == 0)
		return;
	if ((cfg->mcp_servers = calloc(n, sizeof(*cfg->mcp_servers))) == NULL) {
		c->nomem = 1;
		return;
	}
	i = 0;
	cJSON_ArrayForEach(it, f[MCP_SERVERS]) {
		path_index(p, sizeof(p), "mcp.servers", i);
		/* Counted one by one: a name is compared with earlier ones. */
		parse_server(c, cfg, it, p, &cfg->mcp_servers[i]);
		cfg->nmcp_servers = ++i;
	}
}

enum { PR_MODEL, PR_MCP, PR_N };
static const char *const pr_names[PR_N] = { "model", "mcp" };

static void
parse_profile(struct cctx *c, struct config *cfg, const cJSON *obj,
    const char *path, struct config_profile *pr)
{
	const cJSON	*f[PR_N], *it;
	const char	*s;
	char		 p[FIELD_PATH_MAX], pm[FIELD_PATH_MAX];
	char		 q[QUOTE_MAX * 4 + 8];
	size_t		 len, i, j;

	if (!is_object(c, obj, path))
		return;
	members(c, obj, path, pr_names, f, PR_N);
	path_key(p, sizeof(p), path, "model");
	if (f[PR_MODEL] == NULL)
		cerr(c, p, "is required");
	else if ((s = str_value(c, f[PR_MODEL], p, &len)) != NULL) {
		if (len == 0 || len > MODEL_MAX ||
		    has_space_or_control(s, len))
			cerr(c, p, "must be 1 to %u bytes without white space "
			    "or control characters", MODEL_MAX);
		else
			pr->model = xstrdup(c, s);
	}
	if (f[PR_MCP] == NULL)
		return;
	path_key(pm, sizeof(pm), path, "mcp");
	if (!cJSON_IsArray(f[PR_MCP])) {
		cerr(c, pm, "must be an array of server names");
		return;
	}
	if ((size_t)cJSON_GetArraySize(f[PR_MCP]) > MCP_SERVERS_MAX) {
		cerr(c, pm, "must have at most %u entries", MCP_SERVERS_MAX);
		return;
	}
	if ((pr->mcp = calloc(MCP_SERVERS_MAX, sizeof(*pr->mcp))) == NULL) {
		c->nomem = 1;
		return;
	}
	i = 0;
	cJSON_ArrayForEach(it, f[PR_MCP]) {
		path_index(p, sizeof(p), pm, i++);
		if ((s = str_value(c, it, p, &len)) == NULL)
			continue;
		quote(q, sizeof(q), s);
		for (j = 0; j < pr->nmcp; j++)
			if (strcmp(pr->mcp[j], s) == 0)
				break;
		if (j < pr->nmcp) {
			cerr(c, p, "duplicate server \"%s\"", q);
			continue;
		}
		for (j = 0; j < cfg->nmcp_servers; j++)
			if (cfg->mcp_servers[j].name != NULL &&
			    strcmp(cfg->mcp_servers[j].name, s) == 0)
				break;
		if (j == cfg->nmcp_servers) {
			cerr(c, p, "names no server in mcp.servers (\"%s\")",
			    q);
			continue;
		}
		if ((pr->mcp[pr->nmcp] = xstrdup(c, s)) != NULL)
			pr->nmcp++;
	}
}

static void
parse_profiles(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*it, *jt;
	char		 p[FIELD_PATH_MAX];
	size_t		 n, i;

	if (obj == NULL) {
		cerr(c, "profiles", "is required");
		return;
	}
	if (!cJSON_IsObject(obj)) {
		cerr(c, "profiles", "must be an object of profile names to "
		    "profiles");
		return;
	}
	n = (size_t)cJSON_GetArraySize(obj);
	if (n < 1 || n > PROFILES_MAX) {
		cerr(c, "profiles", "must have from 1 to %u profiles",
		    PROFILES_MAX);
		return;
	}
	if ((cfg->profiles = calloc(n, sizeof(*cfg->profiles))) == NULL) {
		c->nomem = 1;
		return;
	}
	i = 0;
	cJSON_ArrayForEach(it, obj) {
		path_key(p, sizeof(p), "profiles", it->string);
		for (jt = obj->child; jt != it; jt = jt->next)
			if (strcmp(jt->string, it->string) == 0)
				break;
		if (jt != it) {
			cerr(c, p, "duplicate key");
			continue;
		}
		if (!valid_profile_name(it->string, strlen(it->string))) {
			cerr(c, p,
			    "profile name must match [a-zA-Z0-9_-]{1,100}");
			continue;
		}
		if ((cfg->profiles[i].name = xstrdup(c, it->string)) == NULL)
			continue;
		parse_profile(c, cfg, it, p, &cfg->profiles[i]);
		cfg->nprofiles = ++i;
	}
}

static void
parse_tools(struct cctx *c, struct config *cfg, const cJSON *arr)
{
	if (arr == NULL)
		return;
	cfg->ntools = name_list(c, arr, "tools", HOST_TOOLS_MAX,
	    valid_host_tool_name, "[a-z][a-z0-9_]{0,47}", &cfg->tools);
}

static int
valid_label(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > LABEL_MAX || s[0] < 'a' || s[0] > 'z')
		return 0;
	for (i = 1; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		    s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static char *
label_value(struct cctx *c, const cJSON *it, const char *path, const char *def)
{
	const char	*s;
	size_t		 len;

	if (it == NULL)
		return xstrdup(c, def);
	if ((s = str_value(c, it, path, &len)) == NULL)
		return NULL;
	if (!valid_label(s, len)) {
		cerr(c, path, "must be 1 to %u characters of [a-z0-9._-] "
		    "starting with a letter", LABEL_MAX);
		return NULL;
	}
	return xstrdup(c, s);
}

enum { LIM_MEMORY, LIM_CPUS, LIM_PIDS, LIM_N };
static const char *const lim_names[LIM_N] = { "memory_mib", "cpus", "pids" };

static void
parse_limits(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[LIM_N];
	double		 v;

	if (obj == NULL || !is_object(c, obj, "docker.limits"))
		return;
	members(c, obj, "docker.limits", lim_names, f, LIM_N);
	uint_value(c, f[LIM_MEMORY], "docker.limits.memory_mib", MEMORY_MIB_MIN,
	    MEMORY_MIB_MAX, &cfg->memory_mib);
	uint_value(c, f[LIM_PIDS], "docker.limits.pids", PIDS_MIN, PIDS_MAX,
	    &cfg->pids);
	if (f[LIM_CPUS] == NULL)
		return;
	v = cJSON_IsNumber(f[LIM_CPUS]) ? f[LIM_CPUS]->valuedouble : -1;
	if (!(v >= CPUS_MIN && v <= CPUS_MAX))
		cerr(c, "docker.limits.cpus",
		    "must be a number from 0.01 to 64");
	else
		cfg->nano_cpus = (uint64_t)(v * 1e9 + 0.5);
}

enum { DK_SOCKET, DK_PREFIX, DK_LCHAN, DK_LPROF, DK_LIMITS, DK_RUNTIME,
	DK_LOG_DRIVER, DK_N };
static const char *const dk_names[DK_N] = {
	"socket", "container_prefix", "label_channel", "label_profile", "limits",
	"runtime", "log_driver"
};

static void
parse_docker(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[DK_N] = { NULL };
	const char	*s;
	size_t		 len;

	if (obj != NULL && is_object(c, obj, "docker"))
		members(c, obj, "docker", dk_names, f, DK_N);
	s = DEFAULT_DOCKER_SOCKET;
	if (f[DK_SOCKET] != NULL)
		s = abs_path(c, f[DK_SOCKET], "docker.socket", SUN_PATH_MAX);
	cfg->docker_socket = xstrdup(c, s);
	s = DEFAULT_PREFIX;
	if (f[DK_PREFIX] != NULL &&
	    (s = str_value(c, f[DK_PREFIX], "docker.container_prefix", &len)) !=
	    NULL && !valid_container_prefix(s, len)) {
		cerr(c, "docker.container_prefix",
		    "must match [a-z0-9][a-z0-9-]{0,40}");
		s = NULL;
	}
	cfg->container_prefix = xstrdup(c, s);
	cfg->label_channel = label_value(c, f[DK_LCHAN], "docker.label_channel",
	    DEFAULT_LABEL_CHANNEL);
	cfg->label_profile = label_value(c, f[DK_LPROF], "docker.label_profile",
	    DEFAULT_LABEL_PROFILE);
	if (cfg->label_channel != NULL && cfg->label_profile != NULL &&
	    strcmp(cfg->label_channel, cfg->label_profile) == 0)
		cerr(c, "docker.label_profile",
		    "must differ from docker.label_channel");
	parse_limits(c, cfg, f[DK_LIMITS]);
	/* Absent: no HostConfig.Runtime, the engine's default runtime. */
	if (f[DK_RUNTIME] != NULL && (s = str_value(c, f[DK_RUNTIME],
	    "docker.runtime", &len)) != NULL) {
		if (!valid_runtime_name(s, len))
			cerr(c, "docker.runtime", "must be the name of one of "
			    "the engine's runtimes, matching "
			    "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,%u}",
			    RUNTIME_NAME_MAX - 1);
		else
			cfg->docker_runtime = xstrdup(c, s);
	}
	/* "local" keeps what 0.7.3 images always had (PROTOCOL.md 7). */
	s = "local";
	if (f[DK_LOG_DRIVER] != NULL && (s = str_value(c, f[DK_LOG_DRIVER],
	    "docker.log_driver", &len)) != NULL && strcmp(s, "local") != 0 &&
	    strcmp(s, "journald") != 0) {
		cerr(c, "docker.log_driver", "must be \"local\" (two files "
		    "of 10 MiB, the default) or \"journald\" (tagged "
		    "sandbox/<channel>)");
		s = NULL;
	}
	cfg->docker_log_driver = xstrdup(c, s);
}

static void
parse_time_zone(struct cctx *c, struct config *cfg, const cJSON *it)
{
	const char	*s = DEFAULT_TIME_ZONE;
	size_t		 len;

	if (it != NULL &&
	    (s = str_value(c, it, "time_zone", &len)) != NULL &&
	    !time_zone_valid(s, len)) {
		cerr(c, "time_zone", "must be an IANA zone name: 1 to %u "
		    "letters, digits or \"_+-./\", not starting or ending "
		    "with \"/\", no empty, \".\" or \"..\" component",
		    TIME_ZONE_MAX);
		s = NULL;
	}
	cfg->time_zone = xstrdup(c, s);
}

enum { TO_START, TO_TURN, TO_N };
static const char *const to_names[TO_N] = { "start_ms", "turn_ms" };
enum { BU_CALLS, BU_TOKENS, BU_N };
static const char *const bu_names[BU_N] = {
	"max_calls", "max_output_tokens"
};

static void
parse_numbers(struct cctx *c, struct config *cfg, const cJSON *timeouts,
    const cJSON *budgets)
{
	const cJSON	*to[TO_N], *bu[BU_N];

	if (timeouts != NULL && is_object(c, timeouts, "timeouts")) {
		members(c, timeouts, "timeouts", to_names, to, TO_N);
		uint_value(c, to[TO_START], "timeouts.start_ms", TIMEOUT_MS_MIN,
		    TIMEOUT_MS_MAX, &cfg->start_ms);
		uint_value(c, to[TO_TURN], "timeouts.turn_ms", TIMEOUT_MS_MIN,
		    TIMEOUT_MS_MAX, &cfg->turn_ms);
	}
	if (budgets != NULL && is_object(c, budgets, "budgets")) {
		members(c, budgets, "budgets", bu_names, bu, BU_N);
		uint_value(c, bu[BU_CALLS], "budgets.max_calls", MAX_CALLS_MIN,
		    MAX_CALLS_MAX, &cfg->max_calls);
		uint_value(c, bu[BU_TOKENS], "budgets.max_output_tokens",
		    MAX_OUTPUT_TOKENS_MIN, MAX_OUTPUT_TOKENS_MAX,
		    &cfg->max_output_tokens);
	}
}

enum { RE_JOBS, RE_DEADLINE, RE_MODEL, RE_N };
static const char *const re_names[RE_N] = {
	"max_jobs", "deadline_ms", "model"
};

static void
parse_research(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*re[RE_N];
	const char	*s;
	size_t		 len;

	if (obj == NULL || !is_object(c, obj, "research"))
		return;
	members(c, obj, "research", re_names, re, RE_N);
	uint_value(c, re[RE_JOBS], "research.max_jobs", RESEARCH_JOBS_MIN,
	    RESEARCH_JOBS_LIMIT, &cfg->research_max_jobs);
	uint_value(c, re[RE_DEADLINE], "research.deadline_ms",
	    RESEARCH_DEADLINE_MS_MIN, RESEARCH_DEADLINE_MS_MAX,
	    &cfg->research_deadline_ms);
	if (re[RE_MODEL] != NULL && (s = str_value(c, re[RE_MODEL],
	    "research.model", &len)) != NULL) {
		if (len == 0 || len > MODEL_MAX ||
		    has_space_or_control(s, len))
			cerr(c, "research.model", "must be 1 to %u bytes "
			    "without white space or control characters",
			    MODEL_MAX);
		else
			cfg->research_model = xstrdup(c, s);
	}
}

enum { CP_ENGINE, CP_TIMEOUT, CP_BYTES, CP_N };
static const char *const cp_names[CP_N] = {
	"engine", "timeout_ms", "max_request_bytes"
};

/* The host compactor: the client's compaction.compact hook, which the
 * workers learn of at GET /worker/config. */
static void
parse_compaction(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*cp[CP_N];
	const char	*s;
	size_t		 len;

	if (obj == NULL || !is_object(c, obj, "compaction"))
		return;
	members(c, obj, "compaction", cp_names, cp, CP_N);
	if (cp[CP_ENGINE] == NULL)
		cerr(c, "compaction.engine", "is required");
	else if ((s = str_value(c, cp[CP_ENGINE], "compaction.engine",
	    &len)) != NULL) {
		if (!compact_engine_valid(s, len))
			cerr(c, "compaction.engine", "must be 1 to %u of "
			    "[a-zA-Z0-9@/._-]", COMPACT_ENGINE_MAX);
		else
			cfg->compaction_engine = xstrdup(c, s);
	}
	uint_value(c, cp[CP_TIMEOUT], "compaction.timeout_ms",
	    COMPACT_TIMEOUT_MS_MIN, COMPACT_TIMEOUT_MS_MAX,
	    &cfg->compaction_timeout_ms);
	uint_value(c, cp[CP_BYTES], "compaction.max_request_bytes", 1,
	    COMPACT_REQUEST_BYTES_MAX, &cfg->compaction_max_request_bytes);
}

enum { SB_EMPTY_ROOT, SB_N };
static const char *const sb_names[SB_N] = { "empty_root" };

static void
parse_sandbox(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*sb[SB_N];
	const char	*s;
	size_t		 len;

	if (obj == NULL || !is_object(c, obj, "sandbox"))
		return;
	members(c, obj, "sandbox", sb_names, sb, SB_N);
	if (sb[SB_EMPTY_ROOT] == NULL || (s = str_value(c, sb[SB_EMPTY_ROOT],
	    "sandbox.empty_root", &len)) == NULL)
		return;
	if (strcmp(s, "optional") == 0)
		cfg->empty_root_optional = 1;
	else if (strcmp(s, "required") != 0)
		cerr(c, "sandbox.empty_root", "must be \"required\" (the "
		    "default) or \"optional\"");
}

#if RTSANDBOX_TEST_SEAMS
enum { TE_DNS, TE_LOOPBACK, TE_CA, TE_JOURNAL, TE_N };
static const char *const te_names[TE_N] = {
	"dns", "loopback_public", "fetch_ca_file", "journal_socket"
};

/* Test builds only: what lets the controlled fetch reach fixtures on
 * loopback.  A release build does not know the field. */
static void
parse_test(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*te[TE_N];
	const char	*s;
	size_t		 len;

	if (obj == NULL || !is_object(c, obj, "test"))
		return;
	members(c, obj, "test", te_names, te, TE_N);
	if (te[TE_DNS] != NULL &&
	    (s = str_value(c, te[TE_DNS], "test.dns", &len)) != NULL) {
		if (len == 0 || len > 64 || has_space_or_control(s, len))
			cerr(c, "test.dns", "must be IP:PORT");
		else
			cfg->test_dns = xstrdup(c, s);
	}
	if (te[TE_LOOPBACK] != NULL)
		bool_value(c, te[TE_LOOPBACK], "test.loopback_public",
		    &cfg->test_loopback_public);
	if (te[TE_CA] != NULL && (s = abs_path(c, te[TE_CA],
	    "test.fetch_ca_file", PATH_BYTES_MAX)) != NULL)
		cfg->test_fetch_ca_file = xstrdup(c, s);
	/* records go there as to journald, whether or not under systemd */
	if (te[TE_JOURNAL] != NULL && (s = abs_path(c, te[TE_JOURNAL],
	    "test.journal_socket", SUN_PATH_MAX)) != NULL)
		cfg->test_journal_socket = xstrdup(c, s);
}
#endif

static void
parse_thinking(struct cctx *c, struct config *cfg, const cJSON *it)
{
	const char	*s = DEFAULT_THINKING;
	size_t		 len;

	if (it != NULL && (s = str_value(c, it, "default_thinking", &len)) !=
	    NULL && !valid_thinking(s, len)) {
		cerr(c, "default_thinking",
		    "must be one of low, medium, high, xhigh");
		s = NULL;
	}
	cfg->default_thinking = xstrdup(c, s);
}

enum {
	T_STATE_DIR, T_CONTROL_SOCKET, T_CONTROL_GROUP, T_BOT_GROUP, T_IMAGE,
	T_PROFILES,
	T_UPSTREAM, T_MCP, T_TOOLS, T_DOCKER, T_TIME_ZONE, T_TIMEOUTS,
	T_BUDGETS, T_DEFAULT_THINKING, T_RESEARCH, T_COMPACTION, T_PRECHECK,
	T_SANDBOX,
#if RTSANDBOX_TEST_SEAMS
	T_TEST,
#endif
	T_N
};
static const char *const top_names[T_N] = {
	"state_dir", "control_socket", "control_group", "bot_group", "image",
	"profiles",
	"upstream", "mcp", "tools", "docker", "time_zone", "timeouts",
	"budgets", "default_thinking", "research", "compaction", "precheck",
	"sandbox",
#if RTSANDBOX_TEST_SEAMS
	"test",
#endif
};

static void
parse_top(struct cctx *c, struct config *cfg, const cJSON *root)
{
	const cJSON	*f[T_N];

	cfg->memory_mib = CONTAINER_MEMORY / MIB;
	cfg->nano_cpus = CONTAINER_NANO_CPUS;
	cfg->pids = CONTAINER_PIDS_MAX;
	cfg->start_ms = START_MS_DEFAULT;
	cfg->turn_ms = TURN_MS_DEFAULT;
	cfg->max_calls = MAX_CALLS_DEFAULT;
	cfg->max_output_tokens = MAX_OUTPUT_TOKENS_DEFAULT;
	cfg->research_max_jobs = RESEARCH_JOBS_MAX;
	cfg->research_deadline_ms = RESEARCH_DEADLINE_MS;
	cfg->compaction_timeout_ms = COMPACT_TIMEOUT_MS_DEFAULT;
	cfg->compaction_max_request_bytes = COMPACT_REQUEST_BYTES_DEFAULT;
	config_precheck_defaults(cfg);

	members(c, root, "", top_names, f, T_N);
	parse_state_dir(c, cfg, f[T_STATE_DIR]);
	parse_control(c, cfg, f[T_CONTROL_SOCKET], f[T_CONTROL_GROUP]);
	parse_bot_group(c, cfg, f[T_BOT_GROUP]);
	parse_image(c, cfg, f[T_IMAGE]);
	/* Servers first: profiles name them. */
	parse_mcp(c, cfg, f[T_MCP]);
	parse_profiles(c, cfg, f[T_PROFILES]);
	parse_upstream(c, cfg, f[T_UPSTREAM]);
	parse_tools(c, cfg, f[T_TOOLS]);
	parse_docker(c, cfg, f[T_DOCKER]);
	parse_time_zone(c, cfg, f[T_TIME_ZONE]);
	parse_numbers(c, cfg, f[T_TIMEOUTS], f[T_BUDGETS]);
	parse_thinking(c, cfg, f[T_DEFAULT_THINKING]);
	parse_research(c, cfg, f[T_RESEARCH]);
	parse_compaction(c, cfg, f[T_COMPACTION]);
	config_parse_precheck(c, cfg, f[T_PRECHECK]);
	parse_sandbox(c, cfg, f[T_SANDBOX]);
	if (cfg->research_model == NULL && cfg->nprofiles > 0 &&
	    cfg->profiles[0].model != NULL)
		cfg->research_model = xstrdup(c, cfg->profiles[0].model);
#if RTSANDBOX_TEST_SEAMS
	parse_test(c, cfg, f[T_TEST]);
#endif
}

struct config *
config_parse(const char *buf, size_t len, struct config_errors *errs)
{
	struct cctx	 c = { errs, 0, 0 };
	struct config	*cfg = NULL;
	cJSON		*root = NULL;
	const char	*end = NULL;
	size_t		 off;

	if (len > CONFIG_FILE_MAX) {
		cerr(&c, "configuration", "must be at most %u bytes",
		    CONFIG_FILE_MAX);
		goto done;
	}
	if (lex_check(&c, buf, len) == -1)
		goto done;
	root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (root != NULL) {
		for (off = (size_t)(end - buf); off < len; off++)
			if (buf[off] != ' ' && buf[off] != '\t' &&
			    buf[off] != '\n' && buf[off] != '\r')
				break;
		if (off < len) {
			lex_err(&c, buf, off, "text after the end");
			goto done;
		}
	} else {
		off = end != NULL && end >= buf && end <= buf + len ?
		    (size_t)(end - buf) : 0;
		/* cJSON cannot tell exhausted memory from bad syntax. */
		lex_err(&c, buf, off, len == 0 ? "empty file" :
		    "not valid JSON");
		goto done;
	}
	if (!cJSON_IsObject(root)) {
		cerr(&c, "configuration", "must be a JSON object");
		goto done;
	}
	if ((cfg = calloc(1, sizeof(*cfg))) == NULL) {
		c.nomem = 1;
		goto done;
	}
	parse_top(&c, cfg, root);
 done:
	cJSON_Delete(root);
	if (c.nomem)
		cerr(&c, "configuration", "out of memory");
	if (c.nerr > CONFIG_ERRORS_MAX && errs != NULL) {
		char	*line;

		if (asprintf(&line, "configuration: %zu more errors not shown",
		    c.nerr - CONFIG_ERRORS_MAX) == -1)
			line = NULL;
		lines_add(&errs->lines, &errs->n, line);
	}
	if (c.nerr > 0) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

struct config *
config_load(const char *path, struct config_errors *errs)
{
	struct cctx	 c = { errs, 0, 0 };
	int		 fd;

	/* O_NONBLOCK: a FIFO in place of the file must not hang -n. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) ==
	    -1) {
		cerr(&c, path, "%s", strerror(errno));
		return NULL;
	}
	return config_load_fd(fd, path, errs);
}

struct config *
config_load_fd(int fd, const char *path, struct config_errors *errs)
{
	struct cctx	 c = { errs, 0, 0 };
	struct config	*cfg;
	struct stat	 st;
	char		*buf;
	size_t		 len = 0;
	ssize_t		 r;

	if (fstat(fd, &st) == -1) {
		cerr(&c, path, "%s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		cerr(&c, path, "not a regular file");
		close(fd);
		return NULL;
	}
	if (st.st_size > (off_t)CONFIG_FILE_MAX) {
		cerr(&c, path, "larger than %u bytes", CONFIG_FILE_MAX);
		close(fd);
		return NULL;
	}
	/* One byte more than allowed tells a file that grew meanwhile. */
	if ((buf = malloc(CONFIG_FILE_MAX + 1)) == NULL) {
		cerr(&c, path, "%s", strerror(errno));
		close(fd);
		return NULL;
	}
	while (len <= CONFIG_FILE_MAX) {
		r = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			cerr(&c, path, "%s", strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (len > CONFIG_FILE_MAX) {
		cerr(&c, path, "larger than %u bytes", CONFIG_FILE_MAX);
		free(buf);
		return NULL;
	}
	cfg = config_parse(buf, len, errs);
	free(buf);
	return cfg;
}

static void
strv_free(char **v, size_t n)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
config_free(struct config *cfg)
{
	size_t	 i;

	if (cfg == NULL)
		return;
	free(cfg->state_dir);
	free(cfg->control_socket);
	free(cfg->control_group);
	free(cfg->bot_group);
	free(cfg->image);
	for (i = 0; i < cfg->nprofiles; i++) {
		free(cfg->profiles[i].name);
		free(cfg->profiles[i].model);
		strv_free(cfg->profiles[i].mcp, cfg->profiles[i].nmcp);
	}
	free(cfg->profiles);
	free(cfg->upstream_url);
	free(cfg->upstream_credential_file);
	config_creds_free(cfg->cred_channels, cfg->ncred_channels);
	config_creds_free(cfg->cred_speakers, cfg->ncred_speakers);
	free(cfg->upstream_ca_file);
	for (i = 0; i < cfg->nmcp_servers; i++) {
		free(cfg->mcp_servers[i].name);
		free(cfg->mcp_servers[i].url);
		strv_free(cfg->mcp_servers[i].tools,
		    cfg->mcp_servers[i].ntools);
	}
	free(cfg->mcp_servers);
	free(cfg->mcp_credential_file);
	strv_free(cfg->tools, cfg->ntools);
	free(cfg->docker_socket);
	free(cfg->container_prefix);
	free(cfg->label_channel);
	free(cfg->label_profile);
	free(cfg->docker_runtime);
	free(cfg->docker_log_driver);
	free(cfg->compaction_engine);
	strv_free(cfg->precheck_argv, cfg->precheck_argc);
	free(cfg->time_zone);
	free(cfg->default_thinking);
	free(cfg->research_model);
	free(cfg->test_dns);
	free(cfg->test_fetch_ca_file);
	free(cfg->test_journal_socket);
	free(cfg);
}

void
config_errors_free(struct config_errors *errs)
{
	if (errs == NULL)
		return;
	strv_free(errs->lines, errs->n);
	strv_free(errs->warnings, errs->nwarn);
	memset(errs, 0, sizeof(*errs));
}

const struct config_profile *
config_profile(const struct config *cfg, const char *name)
{
	size_t	 i;

	for (i = 0; i < cfg->nprofiles; i++)
		if (strcmp(cfg->profiles[i].name, name) == 0)
			return &cfg->profiles[i];
	return NULL;
}

const struct config_mcp_server *
config_mcp_server(const struct config *cfg, const char *name)
{
	size_t	 i;

	for (i = 0; i < cfg->nmcp_servers; i++)
		if (strcmp(cfg->mcp_servers[i].name, name) == 0)
			return &cfg->mcp_servers[i];
	return NULL;
}

size_t
config_max_segment_len(const struct config *cfg)
{
	size_t	 used;

	used = strlen(cfg->state_dir) + strlen("/") +
	    strlen(BROKER_SOCK_SUFFIX);
	return used < BROKER_SOCK_PATH_MAX ? BROKER_SOCK_PATH_MAX - used : 0;
}

/* Reloads. */

static int
str_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static int
strv_same(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t	 i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (!str_same(a[i], b[i]))
			return 0;
	return 1;
}

/* A gid not looked up (a reload) is the one of the same name before. */
static int
gid_same(gid_t a, gid_t b)
{
	return a == b || a == CONFIG_GID_UNKNOWN || b == CONFIG_GID_UNKNOWN;
}

void
config_keep_gids(struct config *n, const struct config *o)
{
	if (n->has_control_group && n->control_gid == CONFIG_GID_UNKNOWN)
		n->control_gid = o->control_gid;
	if (n->has_bot_group && n->bot_gid == CONFIG_GID_UNKNOWN)
		n->bot_gid = o->bot_gid;
}

int
config_reload_check(const struct config *o, const struct config *n,
    char *why, size_t whylen)
{
	const char	*f = NULL;

	/* In the order of rtsandboxd.conf(5). */
	if (!str_same(o->state_dir, n->state_dir))
		f = "state_dir";
	else if (!str_same(o->control_socket, n->control_socket))
		f = "control_socket";
	else if (!str_same(o->control_group, n->control_group) ||
	    o->has_control_group != n->has_control_group ||
	    !gid_same(o->control_gid, n->control_gid))
		f = "control_group";
	else if (!str_same(o->bot_group, n->bot_group) ||
	    o->has_bot_group != n->has_bot_group ||
	    !gid_same(o->bot_gid, n->bot_gid))
		f = "bot_group";
	else if (!str_same(o->image, n->image))
		f = "image";
	else if (!str_same(o->upstream_url, n->upstream_url))
		f = "upstream.url";
	else if (!str_same(o->upstream_credential_file,
	    n->upstream_credential_file))
		f = "upstream.credential_file";
	else if (!str_same(o->upstream_ca_file, n->upstream_ca_file))
		f = "upstream.ca_file";
	else if (!str_same(o->mcp_credential_file, n->mcp_credential_file))
		f = "mcp.credential_file";
	else if (o->upstream_credential_hook != n->upstream_credential_hook)
		f = "upstream.credential";
	else if (config_cred_reload_check(o, n, why, whylen) == -1)
		return -1;
	else if (o->mcp_credential_hook != n->mcp_credential_hook)
		f = "mcp.credential";
	else if (o->mcp_allow_http != n->mcp_allow_http)
		f = "mcp.allow_http";
	else if (!str_same(o->docker_socket, n->docker_socket))
		f = "docker.socket";
	else if (!str_same(o->container_prefix, n->container_prefix))
		f = "docker.container_prefix";
	else if (!str_same(o->label_channel, n->label_channel))
		f = "docker.label_channel";
	else if (!str_same(o->label_profile, n->label_profile))
		f = "docker.label_profile";
	else if (!str_same(o->docker_runtime, n->docker_runtime))
		f = "docker.runtime";
	else if (!str_same(o->docker_log_driver, n->docker_log_driver))
		f = "docker.log_driver";
	else if (o->memory_mib != n->memory_mib)
		f = "docker.limits.memory_mib";
	else if (o->nano_cpus != n->nano_cpus)
		f = "docker.limits.cpus";
	else if (o->pids != n->pids)
		f = "docker.limits.pids";
	else if (!str_same(o->time_zone, n->time_zone))
		f = "time_zone";
	/* the spawner, which passes it on, keeps the one it started with */
	else if (o->empty_root_optional != n->empty_root_optional)
		f = "sandbox.empty_root";
	else if (!str_same(o->test_dns, n->test_dns) ||
	    o->test_loopback_public != n->test_loopback_public ||
	    !str_same(o->test_fetch_ca_file, n->test_fetch_ca_file) ||
	    !str_same(o->test_journal_socket, n->test_journal_socket))
		f = "test";
	if (f == NULL)
		return 0;
	snprintf(why, whylen, "%s", f);
	return -1;
}

int
config_brokers_same(const struct config *o, const struct config *n)
{
	size_t	 i;

	if (o->max_calls != n->max_calls ||
	    o->max_output_tokens != n->max_output_tokens ||
	    !str_same(o->compaction_engine, n->compaction_engine) ||
	    o->compaction_timeout_ms != n->compaction_timeout_ms ||
	    o->compaction_max_request_bytes !=
	    n->compaction_max_request_bytes ||
	    !strv_same(o->tools, o->ntools, n->tools, n->ntools) ||
	    o->nprofiles != n->nprofiles ||
	    o->nmcp_servers != n->nmcp_servers)
		return 0;
	for (i = 0; i < o->nprofiles; i++)
		if (!str_same(o->profiles[i].name, n->profiles[i].name) ||
		    !str_same(o->profiles[i].model, n->profiles[i].model) ||
		    !strv_same(o->profiles[i].mcp, o->profiles[i].nmcp,
		    n->profiles[i].mcp, n->profiles[i].nmcp))
			return 0;
	for (i = 0; i < o->nmcp_servers; i++)
		if (!str_same(o->mcp_servers[i].name,
		    n->mcp_servers[i].name) ||
		    !str_same(o->mcp_servers[i].url, n->mcp_servers[i].url) ||
		    !strv_same(o->mcp_servers[i].tools,
		    o->mcp_servers[i].ntools, n->mcp_servers[i].tools,
		    n->mcp_servers[i].ntools))
			return 0;
	return 1;
}

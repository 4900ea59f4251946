/*
 * The Docker Engine API over its Unix socket with one reused libcurl easy
 * handle.  Each call is synchronous and bounded in time and in size; no
 * proxy, no redirect, no other protocol than plain HTTP to the socket.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "dockapi.h"
#include "dockops.h"
#include "limits.h"
#include "log.h"
#include "validate.h"

/* Every path is pinned to the API version this client was written for. */
#define DOCK_URL_BASE		"http://localhost/v1.41"

struct dock_api {
	CURL	*da_curl;
	char	*da_socket;
	char	*da_buf;		/* the answer's body */
	size_t	 da_len, da_cap;
	int	 da_too_big;		/* over DOCK_RESPONSE_MAX */
	size_t	 da_limit;		/* this call's, DOCK_RESPONSE_MAX */
	long	 da_timeout_ms;		/* this call's */
	int	 da_nomem;
	char	 da_curl_err[CURL_ERROR_SIZE];
	char	 da_error[DOCK_ERROR_MAX];
	/* What the engine said it is, until the socket fails to connect. */
	struct dock_engine_info	 da_engine;
	int			 da_probed;
};

/* One Engine API request and what came back. */
struct dock_call {
	const char	*dc_method;	/* GET, POST or DELETE */
	const char	*dc_path;	/* after /v1.41, escaped */
	const cJSON	*dc_body;	/* POST body, or NULL */
	long		 dc_status;
	cJSON		*dc_reply;	/* parsed JSON answer, or NULL */
	/* A raw answer (logs): not parsed, read up to dc_limit bytes, and
	 * what came within dc_timeout_ms kept. */
	int		 dc_raw;
	int		 dc_cut;
	size_t		 dc_limit;
	long		 dc_timeout_ms;
};

struct dock_api *
dock_api_new(const char *socket_path)
{
	struct sockaddr_un	 sun;
	struct dock_api		*da;

	if (socket_path == NULL || socket_path[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	if (strlen(socket_path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((da = calloc(1, sizeof(*da))) == NULL)
		return NULL;
	if ((da->da_socket = strdup(socket_path)) == NULL) {
		free(da);
		return NULL;
	}
	if ((da->da_curl = curl_easy_init()) == NULL) {
		free(da->da_socket);
		free(da);
		errno = ENOMEM;
		return NULL;
	}
	return da;
}

void
dock_api_free(struct dock_api *da)
{
	if (da == NULL)
		return;
	curl_easy_cleanup(da->da_curl);
	free(da->da_socket);
	free(da->da_buf);
	free(da);
}

const char *
dock_api_last_error(struct dock_api *da)
{
	return da->da_error;
}

/*
 * Keeps one line for the host log: Docker's messages may quote names, and
 * names come from channel keys.
 */
static void
set_error(struct dock_api *da, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
set_error(struct dock_api *da, const char *fmt, ...)
{
	va_list	 ap;
	char	*p;

	va_start(ap, fmt);
	(void)vsnprintf(da->da_error, sizeof(da->da_error), fmt, ap);
	va_end(ap);
	for (p = da->da_error; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct dock_api	*da = arg;
	size_t		 n = size * nmemb, cap;
	char		*nb;

	if (n > da->da_limit - da->da_len) {
		da->da_too_big = 1;
		return 0;
	}
	if (da->da_len + n > da->da_cap) {
		cap = da->da_cap == 0 ? 16384 : da->da_cap;
		while (cap < da->da_len + n)
			cap *= 2;
		if (cap > da->da_limit)
			cap = da->da_limit;
		if ((nb = realloc(da->da_buf, cap)) == NULL) {
			da->da_nomem = 1;
			return 0;
		}
		da->da_buf = nb;
		da->da_cap = cap;
	}
	memcpy(da->da_buf + da->da_len, ptr, n);
	da->da_len += n;
	return n;
}

/* Docker's {"message": ...} of an error answer, else the start of it. */
static void
keep_docker_message(struct dock_api *da, const struct dock_call *c)
{
	const cJSON	*m;
	int		 n;

	m = cJSON_GetObjectItemCaseSensitive(c->dc_reply, "message");
	if (cJSON_IsString(m))
		set_error(da, "%s %s: %ld %s", c->dc_method, c->dc_path,
		    c->dc_status, m->valuestring);
	else {
		n = da->da_len > 200 ? 200 : (int)da->da_len;
		set_error(da, "%s %s: %ld %.*s", c->dc_method, c->dc_path,
		    c->dc_status, n, da->da_len > 0 ? da->da_buf : "");
	}
}

static enum dock_err
curl_failure(struct dock_api *da, CURLcode rc)
{
	const char	*why;

	why = da->da_curl_err[0] != '\0' ? da->da_curl_err :
	    curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		/* Another engine may answer there next: ask it again. */
		da->da_probed = 0;
		set_error(da, "Docker daemon unreachable at %s: %s",
		    da->da_socket, why);
		return DOCK_UNREACHABLE;
	case CURLE_OPERATION_TIMEDOUT:
		set_error(da, "Docker call timed out after %ld ms at %s: %s",
		    da->da_timeout_ms, da->da_socket, why);
		return DOCK_TIMEOUT;
	case CURLE_OUT_OF_MEMORY:
		set_error(da, "out of memory in a Docker call");
		return DOCK_NOMEM;
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		if (da->da_nomem) {
			set_error(da, "out of memory reading a Docker answer");
			return DOCK_NOMEM;
		}
		if (da->da_too_big || rc == CURLE_FILESIZE_EXCEEDED) {
			set_error(da, "Docker answer over %u bytes",
			    DOCK_RESPONSE_MAX);
			return DOCK_API;
		}
		break;
	default:
		break;
	}
	set_error(da, "Docker call failed at %s: %s", da->da_socket, why);
	return DOCK_API;
}

/* Every option of every call; -1 when libcurl refuses one. */
static int
set_options(struct dock_api *da, const char *url, struct curl_slist *hdrs,
    long timeout_ms)
{
	CURL	*h = da->da_curl;

	/*
	 * The handle is reset for every call so that nothing of the last one
	 * (method, body) leaks into this one; the connection is kept.
	 */
	curl_easy_reset(h);
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, da->da_socket) !=
	    CURLE_OK ||
	    /* "" rather than unset: the *_proxy variables are ignored. */
	    curl_easy_setopt(h, CURLOPT_PROXY, "") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
#if LIBCURL_VERSION_NUM >= 0x075500
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
#else
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTP) !=
	    CURLE_OK ||
#endif
	    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
	    (long)CURL_HTTP_VERSION_1_1) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms) != CURLE_OK ||
	    /* No signals: the process owns its signal handlers. */
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)da->da_limit) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, da) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, da->da_curl_err) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK)
		return -1;
	return 0;
}

/*
 * One request.  DOCK_OK means an HTTP answer came, whatever its status;
 * c->dc_reply then holds its JSON when it had any, and an error status
 * leaves Docker's message in da_error.
 */
static enum dock_err
dock_call(struct dock_api *da, struct dock_call *c)
{
	struct curl_slist	*hdrs = NULL, *t;
	char			*url = NULL, *body = NULL;
	CURLcode		 rc;
	enum dock_err		 e = DOCK_NOMEM;
	CURL			*h = da->da_curl;

	c->dc_status = 0;
	c->dc_reply = NULL;
	da->da_len = 0;
	da->da_limit = c->dc_limit > 0 ? c->dc_limit : DOCK_RESPONSE_MAX;
	da->da_too_big = da->da_nomem = 0;
	da->da_curl_err[0] = '\0';
	da->da_error[0] = '\0';

	if (asprintf(&url, "%s%s", DOCK_URL_BASE, c->dc_path) == -1) {
		url = NULL;
		goto done;
	}
	if (c->dc_body != NULL) {
		if ((body = cJSON_PrintUnformatted(c->dc_body)) == NULL)
			goto done;
		/* Without "Expect:" a large body waits for 100-continue. */
		if ((t = curl_slist_append(hdrs,
		    "Content-Type: application/json")) == NULL)
			goto done;
		hdrs = t;
		if ((t = curl_slist_append(hdrs, "Expect:")) == NULL)
			goto done;
		hdrs = t;
	}
	da->da_timeout_ms = c->dc_timeout_ms > 0 ? c->dc_timeout_ms :
	    DOCKER_CALL_TIMEOUT_MS;
	if (set_options(da, url, hdrs, da->da_timeout_ms) == -1) {
		set_error(da, "cannot set up a Docker call");
		e = DOCK_API;
		goto done;
	}
	if (strcmp(c->dc_method, "POST") == 0)
		rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS,
		    body != NULL ? body : "");
	else if (strcmp(c->dc_method, "DELETE") == 0)
		rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	else
		rc = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	if (rc != CURLE_OK) {
		e = curl_failure(da, rc);
		goto done;
	}
	if ((rc = curl_easy_perform(h)) != CURLE_OK &&
	    !(c->dc_raw && da->da_len > 0 && (da->da_too_big ||
	    rc == CURLE_OPERATION_TIMEDOUT))) {
		e = curl_failure(da, rc);
		goto done;
	}
	/* A raw answer that went on past its bound or its time: what came
	 * is kept. */
	c->dc_cut = rc != CURLE_OK;
	if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->dc_status) !=
	    CURLE_OK) {
		set_error(da, "no status in a Docker answer");
		e = DOCK_API;
		goto done;
	}
	if (da->da_len > 0 && (!c->dc_raw || c->dc_status < 200 ||
	    c->dc_status > 299))
		c->dc_reply = cJSON_ParseWithLength(da->da_buf, da->da_len);
	if (c->dc_status < 200 || c->dc_status > 299)
		keep_docker_message(da, c);
	e = DOCK_OK;
 done:
	if (e == DOCK_NOMEM && da->da_error[0] == '\0')
		set_error(da, "out of memory in a Docker call");
	curl_slist_free_all(hdrs);
	cJSON_free(body);
	free(url);
	return e;
}

static void
call_done(struct dock_call *c)
{
	cJSON_Delete(c->dc_reply);
	c->dc_reply = NULL;
}

/* An error status that is none of the expected ones. */
static enum dock_err
unexpected(struct dock_api *da, const struct dock_call *c)
{
	if (da->da_error[0] == '\0')
		set_error(da, "%s %s: unexpected %ld", c->dc_method,
		    c->dc_path, c->dc_status);
	return DOCK_API;
}

/* A 2xx answer without the JSON it should have. */
static enum dock_err
malformed(struct dock_api *da, const struct dock_call *c, const char *what)
{
	set_error(da, "%s %s: %ld answer without %s", c->dc_method,
	    c->dc_path, c->dc_status, what);
	return DOCK_API;
}

/* Container ids are lowercase hex; anything else is not an id. */
int
dock_valid_id(const char *s, size_t maxlen)
{
	size_t	 i;

	for (i = 0; s[i] != '\0'; i++)
		if (i >= maxlen || !((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i > 0;
}

/* Copies src when it fits; else dst is left "" and -1 returned. */
static int
copy_str(char *dst, size_t dstlen, const char *src)
{
	if (strlen(src) >= dstlen) {
		if (dstlen > 0)
			dst[0] = '\0';
		return -1;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* A member's string value, or NULL when absent or not a string. */
static const char *
str_member(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int
str_equal(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* s escaped for a URL, for curl_free(); NULL when out of memory. */
static char *
escaped(struct dock_api *da, const char *s)
{
	return curl_easy_escape(da->da_curl, s, 0);
}

/*
 * GET /containers/<name>/json into st.  With ds, *same says whether the
 * container runs with the configured image and ds's channel and profile.
 */
static enum dock_err
inspect(struct dock_api *da, const struct dock_config *dc, const char *name,
    const char *want_channel, const struct dock_spec *ds,
    const char *want_runtime, struct dock_status *st, int *same)
{
	struct dock_call	 c = { .dc_method = "GET" };
	const cJSON		*cfg, *labels, *state;
	const char		*id, *image, *profile, *channel, *cname;
	const char		*runtime;
	char			*esc, *path = NULL;
	enum dock_err		 e;
	int			 running;

	memset(st, 0, sizeof(*st));
	st->state = DOCK_MISSING;
	if (same != NULL)
		*same = 0;
	if ((esc = escaped(da, name)) == NULL)
		return DOCK_NOMEM;
	if (asprintf(&path, "/containers/%s/json", esc) == -1) {
		curl_free(esc);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status == 404) {
		da->da_error[0] = '\0';
		goto done;
	}
	if (c.dc_status != 200) {
		e = unexpected(da, &c);
		goto done;
	}
	cfg = cJSON_GetObjectItemCaseSensitive(c.dc_reply, "Config");
	state = cJSON_GetObjectItemCaseSensitive(c.dc_reply, "State");
	labels = cJSON_GetObjectItemCaseSensitive(cfg, "Labels");
	id = str_member(c.dc_reply, "Id");
	cname = str_member(c.dc_reply, "Name");
	if (!cJSON_IsObject(cfg) || !cJSON_IsObject(state) || id == NULL ||
	    !dock_valid_id(id, sizeof(st->id) - 1) || cname == NULL) {
		e = malformed(da, &c, "Id, Name, Config or State");
		goto done;
	}
	/* Docker also matches ids; only the exact name is this container. */
	if (cname[0] != '/' || strcmp(cname + 1, name) != 0) {
		set_error(da, "GET %s: answered for %s", path, cname);
		e = DOCK_API;
		goto done;
	}
	image = str_member(cfg, "Image");
	profile = str_member(labels, dc->label_profile);
	channel = str_member(labels, dc->label_channel);
	/* A paused worker serves nothing: recreating it is the cure. */
	running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state,
	    "Running"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state, "Paused")))
		running = 0;
	st->state = running ? DOCK_RUNNING : DOCK_STOPPED;
	(void)copy_str(st->id, sizeof(st->id), id);
	if (image != NULL)
		(void)copy_str(st->image, sizeof(st->image), image);
	if (profile != NULL)
		(void)copy_str(st->profile, sizeof(st->profile), profile);
	st->ours = str_equal(channel, want_channel);
	runtime = str_member(cJSON_GetObjectItemCaseSensitive(c.dc_reply,
	    "HostConfig"), "Runtime");
	if (same != NULL)
		*same = running && str_equal(image, dc->image) &&
		    str_equal(profile, ds->profile) && st->ours &&
		    (want_runtime == NULL || str_equal(runtime, want_runtime));
 done:
	call_done(&c);
	free(path);
	return e;
}

/* Labels and name are all dock_status() needs of the configuration. */
static enum dock_err
name_for(const struct dock_config *dc, const char *channel, char *name,
    size_t namelen)
{
	if (dc->label_channel == NULL || dc->label_profile == NULL ||
	    dc->label_channel[0] == '\0' || dc->label_profile[0] == '\0' ||
	    strcmp(dc->label_channel, dc->label_profile) == 0)
		return DOCK_BAD_LABEL;
	return dock_container_name(dc, channel, name, namelen);
}

enum dock_err
dock_status(struct dock_api *da, const struct dock_config *dc,
    const char *channel, struct dock_status *st)
{
	char		 name[CONTAINER_NAME_MAX + 1];
	enum dock_err	 e;

	memset(st, 0, sizeof(*st));
	st->state = DOCK_MISSING;
	da->da_error[0] = '\0';
	if ((e = name_for(dc, channel, name, sizeof(name))) != DOCK_OK)
		return e;
	return inspect(da, dc, name, channel, NULL, NULL, st, NULL);
}

/* DELETE /containers/<ref>?force=true, where ref is a name or an id. */
static enum dock_err
force_remove(struct dock_api *da, const char *ref)
{
	struct dock_call	 c = { .dc_method = "DELETE" };
	char			*esc, *path;
	enum dock_err		 e;

	if ((esc = escaped(da, ref)) == NULL)
		return DOCK_NOMEM;
	if (asprintf(&path, "/containers/%s?force=true", esc) == -1) {
		curl_free(esc);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	if ((e = dock_call(da, &c)) == DOCK_OK) {
		switch (c.dc_status) {
		case 200:
		case 204:
			break;
		case 404:
			/* Already gone is what was asked for. */
			da->da_error[0] = '\0';
			break;
		case 409:
			e = DOCK_CONFLICT;
			break;
		default:
			e = unexpected(da, &c);
			break;
		}
	}
	call_done(&c);
	free(path);
	return e;
}

/* Create warnings (a limit the kernel cannot enforce) go to the host log. */
static void
log_warnings(const char *name, const cJSON *reply)
{
	const cJSON	*w, *it;

	w = cJSON_GetObjectItemCaseSensitive(reply, "Warnings");
	cJSON_ArrayForEach(it, w)
		if (cJSON_IsString(it))
			log_warnx("dock_ensure_running: %s: Docker warns: "
			    "%.200s", name, it->valuestring);
}

/* POST /containers/create of body, which it frees. */
static enum dock_err
create(struct dock_api *da, const struct dock_config *dc, cJSON *body,
    const char *name, char *id, size_t idlen)
{
	struct dock_call	 c = { .dc_method = "POST" };
	const cJSON		*cid_item;
	const char		*cid;
	char			*esc, *path = NULL;
	enum dock_err		 e;

	if (body == NULL)
		return DOCK_NOMEM;
	if ((esc = escaped(da, name)) == NULL) {
		cJSON_Delete(body);
		return DOCK_NOMEM;
	}
	if (asprintf(&path, "/containers/create?name=%s", esc) == -1) {
		curl_free(esc);
		cJSON_Delete(body);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	c.dc_body = body;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	switch (c.dc_status) {
	case 201:
		break;
	case 404:
		/* Never pulled: a missing image is the operator's to fix. */
		if (da->da_error[0] == '\0')
			set_error(da, "image %s not present", dc->image);
		e = DOCK_NO_IMAGE;
		goto done;
	case 409:
		e = DOCK_CONFLICT;
		goto done;
	default:
		e = unexpected(da, &c);
		goto done;
	}
	cid_item = cJSON_GetObjectItemCaseSensitive(c.dc_reply, "Id");
	cid = cJSON_IsString(cid_item) ? cid_item->valuestring : NULL;
	if (cid == NULL || !dock_valid_id(cid, idlen - 1)) {
		e = malformed(da, &c, "an Id that fits");
		goto done;
	}
	(void)copy_str(id, idlen, cid);
	log_warnings(name, c.dc_reply);
 done:
	call_done(&c);
	cJSON_Delete(body);
	free(path);
	return e;
}

static enum dock_err
start(struct dock_api *da, const char *id)
{
	struct dock_call	 c = { .dc_method = "POST" };
	char			*path;
	enum dock_err		 e;

	/* id is hex (dock_valid_id), nothing to escape. */
	if (asprintf(&path, "/containers/%s/start", id) == -1)
		return DOCK_NOMEM;
	c.dc_path = path;
	if ((e = dock_call(da, &c)) == DOCK_OK &&
	    c.dc_status != 204 && c.dc_status != 304)
		e = unexpected(da, &c);
	call_done(&c);
	free(path);
	return e;
}

/*
 * GET path, which must answer 200 with a body that parse() reads; the raw
 * body is what the pure parsers of dockinfo.c take.
 */
static enum dock_err
get_about(struct dock_api *da, const char *path,
    int (*parse)(const char *, size_t, struct dock_engine_info *),
    struct dock_engine_info *ei)
{
	struct dock_call	 c = { .dc_method = "GET", .dc_path = path };
	enum dock_err		 e;

	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status != 200)
		e = unexpected(da, &c);
	else if (parse(da->da_buf, da->da_len, ei) == -1)
		e = malformed(da, &c, "the object it should be");
 done:
	call_done(&c);
	return e;
}

/*
 * What the engine is; with all, also what only a doctor asks (Podman's
 * /info and /libpod/info).  An engine that does not speak v1.41 is refused
 * here with its own words rather than by every call after.
 */
static enum dock_err
probe(struct dock_api *da, struct dock_engine_info *ei, int all)
{
	enum dock_err	 e;

	dock_engine_info_init(ei);
	if ((e = get_about(da, "/version", dock_parse_version, ei)) !=
	    DOCK_OK)
		return e;
	if (!ei->ei_api_ok) {
		set_error(da, "%s %s at %s speaks Engine API %s to %s, not "
		    "v%d.%d", ei->ei_name[0] != '\0' ? ei->ei_name : "engine",
		    ei->ei_version, da->da_socket,
		    ei->ei_min_api_version[0] != '\0' ?
		    ei->ei_min_api_version : "?",
		    ei->ei_api_version[0] != '\0' ? ei->ei_api_version : "?",
		    DOCK_API_MAJOR, DOCK_API_MINOR);
		return DOCK_API;
	}
	/* Podman's runtimes are not chosen through this API. */
	if (ei->ei_engine == DOCK_ENGINE_PODMAN && !all)
		return DOCK_OK;
	if ((e = get_about(da, "/info", dock_parse_info, ei)) != DOCK_OK)
		return e;
	if (ei->ei_engine == DOCK_ENGINE_PODMAN &&
	    get_about(da, "/libpod/info", dock_parse_libpod_info, ei) !=
	    DOCK_OK)
		da->da_error[0] = '\0';
	return DOCK_OK;
}

/* Runtime names for an error line: "runc runsc ...". */
static void
runtime_names(const struct dock_engine_info *ei, char *buf, size_t len)
{
	size_t	 i, o = 0;
	int	 n;

	buf[0] = '\0';
	for (i = 0; i < ei->ei_nruntimes && o < len; i++) {
		n = snprintf(buf + o, len - o, "%s%s", i > 0 ? " " : "",
		    ei->ei_runtimes[i].dr_name);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/*
 * The runtime a kept container must run under: the configured one, which
 * the engine must have, else the engine's default; NULL when it cannot be
 * compared (Podman reports every container's runtime as "oci").
 */
static enum dock_err
want_runtime(struct dock_api *da, const struct dock_config *dc,
    const char **want)
{
	struct dock_engine_info	*ei = &da->da_engine;
	char			 names[256];
	enum dock_err		 e;

	*want = NULL;
	if (!da->da_probed) {
		if ((e = probe(da, ei, 0)) != DOCK_OK)
			return e;
		da->da_probed = 1;
	}
	if (ei->ei_engine == DOCK_ENGINE_PODMAN) {
		if (dc->runtime == NULL)
			return DOCK_OK;
		set_error(da, "runtime %s: Podman's Docker-compatible API does "
		    "not choose runtimes; leave docker.runtime out and set "
		    "the runtime in Podman's containers.conf", dc->runtime);
		return DOCK_NO_RUNTIME;
	}
	if (dc->runtime == NULL) {
		if (ei->ei_default_runtime[0] != '\0')
			*want = ei->ei_default_runtime;
		return DOCK_OK;
	}
	/* The operator may have added it to the engine since it was asked. */
	if (dock_engine_runtime(ei, dc->runtime) == NULL &&
	    (e = get_about(da, "/info", dock_parse_info, ei)) != DOCK_OK)
		return e;
	if (dock_engine_runtime(ei, dc->runtime) == NULL) {
		runtime_names(ei, names, sizeof(names));
		set_error(da, "runtime %s is not one of the engine's at %s (%s)",
		    dc->runtime, da->da_socket, names);
		return DOCK_NO_RUNTIME;
	}
	*want = dc->runtime;
	return DOCK_OK;
}

enum dock_err
dock_ensure_running(struct dock_api *da, const struct dock_config *dc,
    const struct dock_spec *ds, int *recreated, char *id, size_t idlen)
{
	struct dock_status	 st;
	char			 name[CONTAINER_NAME_MAX + 1];
	char			 cid[sizeof(st.id)];
	const char		*runtime;
	enum dock_err		 e;
	int			 same;

	*recreated = 0;
	if (idlen > 0)
		id[0] = '\0';
	da->da_error[0] = '\0';
	if ((e = dock_check_spec(dc, ds)) != DOCK_OK ||
	    (e = dock_container_name(dc, ds->channel, name, sizeof(name))) !=
	    DOCK_OK)
		return e;
	/* Before anything is removed: a bad runtime changes nothing. */
	if ((e = want_runtime(da, dc, &runtime)) != DOCK_OK)
		return e;
	if ((e = inspect(da, dc, name, ds->channel, ds, runtime, &st,
	    &same)) != DOCK_OK)
		return e;
	if (same) {
		if (copy_str(id, idlen, st.id) == -1) {
			set_error(da, "container id longer than %zu", idlen);
			return DOCK_API;
		}
		return DOCK_OK;
	}
	/* By id: exactly the container just looked at. */
	if (st.state != DOCK_MISSING &&
	    (e = force_remove(da, st.id)) != DOCK_OK)
		return e;
	if ((e = create(da, dc, dock_create_body(dc, ds,
	    da->da_engine.ei_engine), name, cid, sizeof(cid))) != DOCK_OK)
		return e;
	*recreated = 1;
	if ((e = start(da, cid)) != DOCK_OK)
		return e;
	if (copy_str(id, idlen, cid) == -1) {
		set_error(da, "container id longer than %zu", idlen);
		return DOCK_API;
	}
	return DOCK_OK;
}

enum dock_err
dock_remove(struct dock_api *da, const struct dock_config *dc,
    const char *channel)
{
	char		 name[CONTAINER_NAME_MAX + 1];
	enum dock_err	 e;

	da->da_error[0] = '\0';
	if ((e = dock_container_name(dc, channel, name, sizeof(name))) !=
	    DOCK_OK)
		return e;
	return force_remove(da, name);
}

enum dock_err
dock_logs(struct dock_api *da, const struct dock_config *dc,
    const char *channel, size_t lines, struct dock_log_lines *out,
    int *missing)
{
	struct dock_call	 c = { .dc_method = "GET", .dc_raw = 1,
	    .dc_limit = DOCK_LOGS_BYTES_MAX,
	    .dc_timeout_ms = DOCK_LOGS_TIMEOUT_MS };
	char			 name[CONTAINER_NAME_MAX + 1];
	char			*esc, *path;
	enum dock_err		 e;

	da->da_error[0] = '\0';
	*missing = 0;
	out->dl_n = 0;
	if (lines < 1 || lines > DOCK_LOGS_LINES_MAX)
		return DOCK_API;
	if ((e = dock_container_name(dc, channel, name, sizeof(name))) !=
	    DOCK_OK)
		return e;
	if ((esc = escaped(da, name)) == NULL)
		return DOCK_NOMEM;
	if (asprintf(&path, "/containers/%s/logs?stdout=1&stderr=1&tail=%zu",
	    esc, lines) == -1) {
		curl_free(esc);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	if ((e = dock_call(da, &c)) == DOCK_OK) {
		if (c.dc_status == 200) {
			(void)dock_logs_parse((const uint8_t *)da->da_buf,
			    da->da_len, lines, out);
			out->dl_cut |= c.dc_cut;
		} else if (c.dc_status == 404) {
			da->da_error[0] = '\0';
			*missing = 1;
		} else
			e = unexpected(da, &c);
	}
	call_done(&c);
	free(path);
	return e;
}

enum dock_err
dock_engine(struct dock_api *da, struct dock_engine_info *ei)
{
	da->da_error[0] = '\0';
	return probe(da, ei, 1);
}

enum dock_err
dock_image(struct dock_api *da, const char *image, struct dock_image_info *im,
    int *present)
{
	struct dock_call	 c = { .dc_method = "GET" };
	char			*esc, *path = NULL;
	enum dock_err		 e;

	*present = 0;
	memset(im, 0, sizeof(*im));
	da->da_error[0] = '\0';
	if (image == NULL || strlen(image) > DOCK_IMAGE_MAX ||
	    !valid_image_name(image, strlen(image)))
		return DOCK_BAD_IMAGE;
	if ((esc = escaped(da, image)) == NULL)
		return DOCK_NOMEM;
	if (asprintf(&path, "/images/%s/json", esc) == -1) {
		curl_free(esc);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status == 404) {
		da->da_error[0] = '\0';
		goto done;
	}
	if (c.dc_status != 200)
		e = unexpected(da, &c);
	else if (dock_parse_image(da->da_buf, da->da_len, image, im) == -1)
		e = malformed(da, &c, "an Id");
	else
		*present = 1;
 done:
	call_done(&c);
	free(path);
	return e;
}

/* The entry's own name: "/<prefix>-..." and not a link's "/a/b". */
static const char *
own_name(const cJSON *names, const char *prefix)
{
	const cJSON	*it;
	size_t		 pl = strlen(prefix);
	const char	*s;

	cJSON_ArrayForEach(it, names) {
		if (!cJSON_IsString(it))
			continue;
		s = it->valuestring;
		if (s[0] == '/' && strncmp(s + 1, prefix, pl) == 0 &&
		    s[pl + 1] == '-' && strchr(s + 1, '/') == NULL)
			return s;
	}
	return NULL;
}

/* One listed container into de; -1 when it is not one of ours. */
static int
list_entry(const struct dock_config *dc, const cJSON *it, struct dock_entry *de)
{
	const cJSON	*labels;
	const char	*name, *channel, *profile, *state, *image, *id;

	memset(de, 0, sizeof(*de));
	if ((name = own_name(cJSON_GetObjectItemCaseSensitive(it, "Names"),
	    dc->prefix)) == NULL)
		return -1;
	labels = cJSON_GetObjectItemCaseSensitive(it, "Labels");
	/* A precheck run's container is no channel's. */
	if (cJSON_GetObjectItemCaseSensitive(labels, DOCK_PRECHECK_LABEL) !=
	    NULL)
		return -1;
	channel = str_member(labels, dc->label_channel);
	profile = str_member(labels, dc->label_profile);
	id = str_member(it, "Id");
	if (channel == NULL || id == NULL ||
	    !dock_valid_id(id, sizeof(de->id) - 1))
		return -1;
	/* Values that do not fit were not written by this client. */
	if (copy_str(de->name, sizeof(de->name), name) == -1 ||
	    copy_str(de->channel, sizeof(de->channel), channel) == -1 ||
	    (profile != NULL &&
	    copy_str(de->profile, sizeof(de->profile), profile) == -1))
		return -1;
	(void)copy_str(de->id, sizeof(de->id), id);
	if ((state = str_member(it, "State")) != NULL)
		(void)copy_str(de->state, sizeof(de->state), state);
	if ((image = str_member(it, "Image")) != NULL)
		(void)copy_str(de->image, sizeof(de->image), image);
	return 0;
}

enum dock_err
dock_list(struct dock_api *da, const struct dock_config *dc,
    struct dock_entry **out, size_t *n)
{
	struct dock_call	 c = { .dc_method = "GET" };
	struct dock_entry	*ents = NULL;
	cJSON			*filters, *arr;
	const cJSON		*it;
	char			*fjson = NULL, *esc = NULL, *path = NULL;
	enum dock_err		 e = DOCK_NOMEM;
	size_t			 cnt = 0, max;

	*out = NULL;
	*n = 0;
	da->da_error[0] = '\0';
	if (dc->prefix == NULL ||
	    !valid_container_prefix(dc->prefix, strlen(dc->prefix)))
		return DOCK_BAD_NAME;
	if (dc->label_channel == NULL || dc->label_channel[0] == '\0' ||
	    dc->label_profile == NULL)
		return DOCK_BAD_LABEL;
	/* {"label":["<label_channel>"]}: containers that carry the label. */
	if ((filters = cJSON_CreateObject()) == NULL)
		return DOCK_NOMEM;
	if ((arr = cJSON_AddArrayToObject(filters, "label")) == NULL ||
	    !cJSON_AddItemToArray(arr,
	    cJSON_CreateString(dc->label_channel)) ||
	    (fjson = cJSON_PrintUnformatted(filters)) == NULL ||
	    (esc = escaped(da, fjson)) == NULL ||
	    asprintf(&path, "/containers/json?all=1&filters=%s", esc) == -1) {
		path = NULL;
		goto done;
	}
	c.dc_path = path;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status != 200) {
		e = unexpected(da, &c);
		goto done;
	}
	if (!cJSON_IsArray(c.dc_reply)) {
		e = malformed(da, &c, "an array");
		goto done;
	}
	if ((max = (size_t)cJSON_GetArraySize(c.dc_reply)) > 0) {
		if ((ents = calloc(max, sizeof(*ents))) == NULL) {
			e = DOCK_NOMEM;
			goto done;
		}
		cJSON_ArrayForEach(it, c.dc_reply)
			if (cnt < max && list_entry(dc, it, &ents[cnt]) == 0)
				cnt++;
	}
	if (cnt == 0) {
		free(ents);
		ents = NULL;
	}
	*out = ents;
	*n = cnt;
	e = DOCK_OK;
 done:
	call_done(&c);
	cJSON_Delete(filters);
	cJSON_free(fjson);
	curl_free(esc);
	free(path);
	return e;
}

/* Precheck runs: the short calls around the attach stream (dockrun.c). */

enum dock_err
dock_precheck_create(struct dock_api *da, const struct dock_config *dc,
    const struct dock_precheck *pc, char *id, size_t idlen)
{
	char		 name[DOCK_PRECHECK_NAME_MAX + 1];
	const char	*runtime;
	enum dock_err	 e;

	if (idlen > 0)
		id[0] = '\0';
	da->da_error[0] = '\0';
	if ((e = dock_check_precheck(dc, pc)) != DOCK_OK ||
	    (e = dock_precheck_name(dc, pc->run, name, sizeof(name))) !=
	    DOCK_OK)
		return e;
	/* The body depends on the engine, and a runtime must be there. */
	if ((e = want_runtime(da, dc, &runtime)) != DOCK_OK)
		return e;
	/* An earlier run's leftover of this number: gone first. */
	if ((e = force_remove(da, name)) != DOCK_OK)
		return e;
	return create(da, dc, dock_precheck_body(dc, pc,
	    da->da_engine.ei_engine), name, id, idlen);
}

enum dock_err
dock_start_id(struct dock_api *da, const char *id)
{
	da->da_error[0] = '\0';
	if (!dock_valid_id(id, 79))
		return DOCK_API;
	return start(da, id);
}

enum dock_err
dock_remove_id(struct dock_api *da, const char *id)
{
	da->da_error[0] = '\0';
	if (!dock_valid_id(id, 79))
		return DOCK_API;
	return force_remove(da, id);
}

enum dock_err
dock_precheck_remove(struct dock_api *da, const struct dock_config *dc,
    uint64_t run)
{
	char		 name[DOCK_PRECHECK_NAME_MAX + 1];
	enum dock_err	 e;

	da->da_error[0] = '\0';
	if ((e = dock_precheck_name(dc, run, name, sizeof(name))) != DOCK_OK)
		return e;
	return force_remove(da, name);
}

enum dock_err
dock_wait_id(struct dock_api *da, const char *id, int64_t *code)
{
	struct dock_call	 c = { .dc_method = "POST" };
	const cJSON		*v;
	char			*path;
	enum dock_err		 e;

	*code = -1;
	da->da_error[0] = '\0';
	if (!dock_valid_id(id, 79))
		return DOCK_API;
	if (asprintf(&path, "/containers/%s/wait", id) == -1)
		return DOCK_NOMEM;
	c.dc_path = path;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status != 200) {
		e = unexpected(da, &c);
		goto done;
	}
	v = cJSON_GetObjectItemCaseSensitive(c.dc_reply, "StatusCode");
	if (!cJSON_IsNumber(v) || v->valuedouble < -2147483648.0 ||
	    v->valuedouble > 2147483647.0) {
		e = malformed(da, &c, "a StatusCode");
		goto done;
	}
	*code = (int64_t)v->valuedouble;
 done:
	call_done(&c);
	free(path);
	return e;
}

enum dock_err
dock_precheck_sweep(struct dock_api *da, const struct dock_config *dc,
    size_t *removed)
{
	struct dock_call	 c = { .dc_method = "GET" };
	const cJSON		*it, *names, *nm;
	const char		*id;
	char			 want[DOCK_PRECHECK_NAME_MAX + 2];
	char			*esc = NULL, *path = NULL;
	enum dock_err		 e;
	size_t			 wl;
	int			 ours;

	*removed = 0;
	da->da_error[0] = '\0';
	if (dc->prefix == NULL ||
	    !valid_container_prefix(dc->prefix, strlen(dc->prefix)))
		return DOCK_BAD_NAME;
	(void)snprintf(want, sizeof(want), "/%s" DOCK_PRECHECK_INFIX,
	    dc->prefix);
	wl = strlen(want);
	if ((esc = escaped(da, "{\"label\":[\"" DOCK_PRECHECK_LABEL "\"]}")) ==
	    NULL ||
	    asprintf(&path, "/containers/json?all=1&filters=%s", esc) == -1) {
		curl_free(esc);
		return DOCK_NOMEM;
	}
	curl_free(esc);
	c.dc_path = path;
	if ((e = dock_call(da, &c)) != DOCK_OK)
		goto done;
	if (c.dc_status != 200) {
		e = unexpected(da, &c);
		goto done;
	}
	if (!cJSON_IsArray(c.dc_reply)) {
		e = malformed(da, &c, "an array");
		goto done;
	}
	cJSON_ArrayForEach(it, c.dc_reply) {
		id = str_member(it, "Id");
		names = cJSON_GetObjectItemCaseSensitive(it, "Names");
		ours = 0;
		cJSON_ArrayForEach(nm, names)
			if (cJSON_IsString(nm) &&
			    strncmp(nm->valuestring, want, wl) == 0 &&
			    strchr(nm->valuestring + 1, '/') == NULL)
				ours = 1;
		if (!ours || id == NULL || !dock_valid_id(id, 79))
			continue;
		if ((e = force_remove(da, id)) != DOCK_OK)
			goto done;
		(*removed)++;
	}
 done:
	call_done(&c);
	free(path);
	return e;
}

/*
 * The Docker client: the only process that connects to the Docker socket.
 * It re-checks every request it is given against its own configuration.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "docker.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

struct docker {
	const char	*dk_socket_arg;	/* from argv: what the sandbox allows */
	char		*dk_socket;
	char		*dk_prefix;
	char		*dk_label_channel;
	char		*dk_label_profile;
	char		*dk_image;
	char		*dk_state_dir;
	char		*dk_time_zone;
	uint64_t	 dk_uid, dk_gid;
	uint64_t	 dk_memory_mib, dk_nano_cpus, dk_pids;
	int		 dk_have_config;
};

static char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

static int
docker_config(struct docker *dk, struct msg *m)
{
	const char	*sock, *prefix, *lc, *lp, *image, *state, *tz;

	if (msg_get_str(m, "socket", PATH_BYTES_MAX, &sock) == -1 ||
	    msg_get_str(m, "container_prefix", 64, &prefix) == -1 ||
	    msg_get_str(m, "label_channel", 128, &lc) == -1 ||
	    msg_get_str(m, "label_profile", 128, &lp) == -1 ||
	    msg_get_str(m, "image", 1024, &image) == -1 ||
	    msg_get_str(m, "state_dir", PATH_BYTES_MAX, &state) == -1 ||
	    msg_get_str(m, "time_zone", 64, &tz) == -1 ||
	    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &dk->dk_uid) == -1 ||
	    msg_get_uint(m, "gid", 1, UINT32_MAX - 1, &dk->dk_gid) == -1 ||
	    msg_get_uint(m, "memory_mib", 1, UINT32_MAX,
	    &dk->dk_memory_mib) == -1 ||
	    msg_get_uint(m, "nano_cpus", 1, UINT64_C(1) << 50,
	    &dk->dk_nano_cpus) == -1 ||
	    msg_get_uint(m, "pids", 1, UINT32_MAX, &dk->dk_pids) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (strcmp(sock, dk->dk_socket_arg) != 0) {
		log_warnx("docker socket %s differs from the sandboxed %s",
		    sock, dk->dk_socket_arg);
		return -1;
	}
	dk->dk_socket = xstrdup(sock);
	dk->dk_prefix = xstrdup(prefix);
	dk->dk_label_channel = xstrdup(lc);
	dk->dk_label_profile = xstrdup(lp);
	dk->dk_image = xstrdup(image);
	dk->dk_state_dir = xstrdup(state);
	dk->dk_time_zone = xstrdup(tz);
	dk->dk_have_config = 1;
	return 0;
}

static int
docker_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct docker	*dk = arg;

	switch (m->m_type) {
	case MSG_CONFIG_DOCKER:
		if (role_parent_configured(rp) || dk->dk_have_config)
			return -1;
		return docker_config(dk, m);
	default:
		return -1;
	}
}

static int
docker_configured(struct role_parent *rp, void *arg)
{
	struct docker	*dk = arg;

	return dk->dk_have_config ? 0 : -1;
}

void
docker_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct docker		 dk;
	struct event_base	*base;

	role_args_parse(PROC_DOCKER, argc, argv, &ra);
	proc_child_check_fds(1);
	if (ra.ra_npaths != 1)
		fatalx("needs exactly one -p path: the Docker socket");
	memset(&dk, 0, sizeof(dk));
	dk.dk_socket_arg = ra.ra_paths[0];

	/* libcurl reads nothing after this; the sandbox comes next. */
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		fatalx("curl_global_init failed");
	base = sandbox_docker(dk.dk_socket_arg);
	role_parent_open(base, PROC_DOCKER, docker_dispatch_supervisor,
	    docker_configured, &dk);
	event_base_dispatch(base);
	fatalx("event loop ended");
}

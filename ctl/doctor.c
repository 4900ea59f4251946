/*
 * rtsandboxctl doctor: the host as rtsandboxd will meet it with one
 * configuration, one line per check.  It is the operator's tool, not a
 * process of the daemon, so it reads the configuration with the daemon's own
 * parser and asks the engine with the Docker client's own code: what it
 * finds is what they will find.  It needs no running daemon and changes
 * nothing: it creates no container, no file and no socket.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"
#include "dockapi.h"
#include "dockinfo.h"
#include "doctor.h"
#include "hostcheck.h"
#include "journal.h"
#include "log.h"

struct doctor {
	size_t	 dr_fail;
	size_t	 dr_warn;
};

static void
doctor_report(const struct hc_result *r, void *arg)
{
	struct doctor	*dr = arg;

	hc_print(r, stdout);
	if (r->hr_status == HC_FAIL)
		dr->dr_fail++;
	else if (r->hr_status == HC_WARN)
		dr->dr_warn++;
}

/* connect(2) first: its errno says more than an HTTP client can. */
static int
engine_connects(const char *path, struct doctor *dr)
{
	struct sockaddr_un	 sun;
	const char		*hint;
	int			 s, rc, err;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		hc_report(doctor_report, dr, HC_FAIL, "engine", "socket: %s",
		    strerror(errno));
		return 0;
	}
	rc = connect(s, (struct sockaddr *)&sun, sizeof(sun));
	err = errno;
	close(s);
	if (rc == 0)
		return 1;
	switch (err) {
	case EACCES:
	case EPERM:
		hint = "the service user may not open it; rather than adding "
		    "it to the socket's group (root-equivalent), point "
		    "docker.socket at its own rootless Podman socket";
		break;
	case ENOENT:
	case ECONNREFUSED:
		hint = "no engine listens there: start dockerd, or podman "
		    "system service as the service user";
		break;
	default:
		hint = "the engine cannot be reached";
		break;
	}
	hc_report(doctor_report, dr, HC_FAIL, "engine", "cannot connect to %s "
	    "(%s): %s; image, runtime and limits not checked", path,
	    strerror(err), hint);
	return 0;
}

/* "4.3.1" is before 5.5. */
static int
before(const char *version, int major, int minor)
{
	int	 ma = 0, mi = 0;

	if (sscanf(version, "%d.%d", &ma, &mi) < 1)
		return 0;
	return ma < major || (ma == major && mi < minor);
}

static void
check_engine_kind(const struct dock_engine_info *ei, const char *sock,
    struct doctor *dr)
{
	struct stat	 st;
	const char	*who;
	int		 rootful;

	rootful = stat(sock, &st) == 0 && st.st_uid == 0;
	who = rootful ? "as root" : "as the socket's owner";
	if (ei->ei_engine == DOCK_ENGINE_PODMAN && ei->ei_rootless == 0) {
		hc_report(doctor_report, dr, HC_FAIL, "engine", "Podman %s at "
		    "%s runs as root: as root-equivalent as dockerd, and its "
		    "keep-id user namespace works only rootless; run podman "
		    "system service as the service user instead",
		    ei->ei_version, sock);
		return;
	}
	if (ei->ei_engine == DOCK_ENGINE_DOCKER && ei->ei_rootless == 1) {
		hc_report(doctor_report, dr, HC_FAIL, "engine", "rootless "
		    "Docker %s at %s maps the container's users to subordinate "
		    "ids, so the worker cannot open its broker socket; use "
		    "rootless Podman, which keeps the service user's id",
		    ei->ei_version, sock);
		return;
	}
	hc_report(doctor_report, dr, HC_OK, "engine", "%s %s at %s, Engine "
	    "API %s to %s, running %s%s",
	    ei->ei_engine == DOCK_ENGINE_PODMAN ? "Podman" : "Docker Engine",
	    ei->ei_version, sock, ei->ei_min_api_version[0] != '\0' ?
	    ei->ei_min_api_version : "?", ei->ei_api_version, who,
	    ei->ei_engine == DOCK_ENGINE_PODMAN && ei->ei_rootless == 1 ?
	    " (rootless)" : "");
}

static void
check_image(struct dock_api *da, const struct config *cfg,
    const struct dock_engine_info *ei, struct doctor *dr)
{
	struct dock_image_info	 im;
	enum dock_err		 e;
	int			 present;

	if ((e = dock_image(da, cfg->image, &im, &present)) != DOCK_OK) {
		hc_report(doctor_report, dr, HC_FAIL, "image", "%s: %s%s%s",
		    cfg->image, dock_err_to_string(e),
		    *dock_api_last_error(da) != '\0' ? ": " : "",
		    dock_api_last_error(da));
		return;
	}
	if (!present)
		hc_report(doctor_report, dr, HC_FAIL, "image", "%s is not in "
		    "the engine, and rtsandboxd never pulls: load it (%s load "
		    "-i FILE%s)", cfg->image,
		    ei->ei_engine == DOCK_ENGINE_PODMAN ? "podman" : "docker",
		    ei->ei_engine == DOCK_ENGINE_PODMAN ?
		    ", as the service user" : "");
	else if (!im.im_tagged)
		hc_report(doctor_report, dr, HC_FAIL, "image", "%s is there "
		    "but the engine names it %s, and a container is kept only "
		    "when the engine reports the configured name: set image to "
		    "\"%s\", or every start recreates the container", cfg->image,
		    im.im_tag[0] != '\0' ? im.im_tag : "otherwise", im.im_tag);
	else
		hc_report(doctor_report, dr, HC_OK, "image", "%s (%.19s)",
		    cfg->image, im.im_id);
}

static void
check_runtime(const struct config *cfg, const struct dock_engine_info *ei,
    struct doctor *dr)
{
	const struct dock_runtime	*rt;
	const char			*name, *problem;
	char				 args[DOCK_RUNTIME_ARGC_MAX *
					     DOCK_RUNTIME_ARG_MAX], names[256];
	size_t				 i, o = 0;

	if (ei->ei_engine == DOCK_ENGINE_PODMAN) {
		if (cfg->docker_runtime != NULL)
			hc_report(doctor_report, dr, HC_FAIL, "runtime", "%s: "
			    "Podman's Docker-compatible API does not choose "
			    "runtimes, and rtsandbox-docker refuses to start "
			    "channels; leave docker.runtime out and set runtime "
			    "in the service user's containers.conf",
			    cfg->docker_runtime);
		else
			hc_report(doctor_report, dr, HC_OK, "runtime",
			    "Podman's own, from containers.conf");
		return;
	}
	name = cfg->docker_runtime != NULL ? cfg->docker_runtime :
	    ei->ei_default_runtime;
	if ((rt = dock_engine_runtime(ei, name)) == NULL) {
		names[0] = '\0';
		for (i = 0; i < ei->ei_nruntimes && o < sizeof(names); i++)
			o += (size_t)snprintf(names + o, sizeof(names) - o,
			    "%s%s", i > 0 ? " " : "",
			    ei->ei_runtimes[i].dr_name);
		hc_report(doctor_report, dr, HC_FAIL, "runtime", "%s is not "
		    "one of the engine's (%s): register it under \"runtimes\" "
		    "in /etc/docker/daemon.json and reload dockerd (SIGHUP)",
		    name[0] != '\0' ? name : "the default", names);
		return;
	}
	args[0] = '\0';
	for (i = 0, o = 0; i < rt->dr_argc && o < sizeof(args); i++)
		o += (size_t)snprintf(args + o, sizeof(args) - o, " %s",
		    rt->dr_argv[i]);
	if ((problem = dock_runtime_problem(rt)) != NULL) {
		hc_report(doctor_report, dr, HC_FAIL, "runtime", "%s (%s%s): "
		    "%s; give it \"runtimeArgs\": [\"--host-uds=open\", "
		    "\"--network=none\"] in /etc/docker/daemon.json",
		    name, rt->dr_path, args, problem);
		return;
	}
	hc_report(doctor_report, dr, HC_OK, "runtime", "%s (%s%s)%s", name,
	    rt->dr_path, args, cfg->docker_runtime == NULL ?
	    ", the engine's default" : "");
}

/* docker.log_driver against the engine's log drivers (GET /info). */
static void
check_log_driver(const struct config *cfg, const struct dock_engine_info *ei,
    struct doctor *dr)
{
	int	 journald = strcmp(cfg->docker_log_driver, "journald") == 0;
	int	 have;

	/* Podman's "local" is its own k8s-file, always there */
	if (!journald && ei->ei_engine == DOCK_ENGINE_PODMAN) {
		hc_report(doctor_report, dr, HC_OK, "log driver", "k8s-file, "
		    "10 MiB (Podman's for local)");
		return;
	}
	have = journald ? ei->ei_log_journald : ei->ei_log_local;
	/* dockerd's journald driver writes to the host's journald */
	if (have == 1 && journald && access(JOURNAL_SOCKET_PATH, F_OK) == -1)
		hc_report(doctor_report, dr, HC_WARN, "log driver", "journald: "
		    "the engine has the driver but %s is missing: is journald "
		    "running on this host?", JOURNAL_SOCKET_PATH);
	else if (have == 1)
		hc_report(doctor_report, dr, HC_OK, "log driver", "%s%s",
		    cfg->docker_log_driver, journald ?
		    ", tagged sandbox/<channel>" : ", 2 files of 10 MiB");
	else if (have == 0)
		hc_report(doctor_report, dr, HC_FAIL, "log driver", "the engine "
		    "has no %s log driver (GET /info Plugins.Log): containers "
		    "cannot start; choose another docker.log_driver",
		    cfg->docker_log_driver);
	else
		hc_report(doctor_report, dr, HC_WARN, "log driver", "the engine "
		    "does not list its log drivers; %s not checked",
		    cfg->docker_log_driver);
}

static void
check_limits(const struct dock_engine_info *ei, struct doctor *dr)
{
	char		 missing[128];
	const char	*nofile = "";
	size_t		 o = 0;

	missing[0] = '\0';
	/* Before 5.5 the compatible API drops Ulimits when rootless: the
	 * worker inherits the service's own open-files limit. */
	if (ei->ei_engine == DOCK_ENGINE_PODMAN && before(ei->ei_version, 5, 5))
		nofile = "; and Podman before 5.5 passes no open-files limit: "
		    "start the service as prlimit --nofile=256:256 podman "
		    "system service ...";
	if (ei->ei_engine == DOCK_ENGINE_PODMAN) {
		if (ei->ei_rootless == 1 && ei->ei_cgroup_version == 1) {
			hc_report(doctor_report, dr, HC_FAIL, "limits",
			    "rootless Podman on cgroup v1 drops the memory, "
			    "pids and cpus limits (it says so only in its own "
			    "log): channels run unbounded; boot with cgroup v2 "
			    "(systemd.unified_cgroup_hierarchy=1) and delegate "
			    "memory, pids and cpu to the service user%s",
			    nofile);
			return;
		}
		if (ei->ei_controllers != -1 &&
		    (ei->ei_controllers & DOCK_CG_ALL) != DOCK_CG_ALL) {
			if (!(ei->ei_controllers & DOCK_CG_MEMORY))
				o += (size_t)snprintf(missing + o,
				    sizeof(missing) - o, " memory");
			if (!(ei->ei_controllers & DOCK_CG_PIDS))
				o += (size_t)snprintf(missing + o,
				    sizeof(missing) - o, " pids");
			if (!(ei->ei_controllers & DOCK_CG_CPU))
				o += (size_t)snprintf(missing + o,
				    sizeof(missing) - o, " cpu");
			hc_report(doctor_report, dr, HC_FAIL, "limits", "the "
			    "cgroup controllers%s are not delegated to the "
			    "service user: Podman drops those limits; delegate "
			    "them (systemd: Delegate=memory pids cpu in "
			    "user@.service)%s", missing, nofile);
			return;
		}
		if (nofile[0] != '\0') {
			hc_report(doctor_report, dr, HC_WARN, "limits",
			    "memory, pids and cpus enforceable (cgroup v%d)%s",
			    ei->ei_cgroup_version, nofile);
			return;
		}
		hc_report(doctor_report, dr, HC_OK, "limits", "memory, pids "
		    "and cpus enforceable (cgroup v%d)",
		    ei->ei_cgroup_version);
		return;
	}
	if (ei->ei_memory_limit != 1)
		o += (size_t)snprintf(missing + o, sizeof(missing) - o,
		    " memory");
	if (ei->ei_swap_limit != 1)
		o += (size_t)snprintf(missing + o, sizeof(missing) - o,
		    " swap");
	if (ei->ei_pids_limit != 1)
		o += (size_t)snprintf(missing + o, sizeof(missing) - o,
		    " pids");
	if (ei->ei_cpu_quota != 1)
		o += (size_t)snprintf(missing + o, sizeof(missing) - o,
		    " cpus");
	if (o > 0)
		hc_report(doctor_report, dr, HC_FAIL, "limits", "the engine "
		    "cannot enforce the%s limits, and creates containers "
		    "without them: enable those cgroup controllers (for swap: "
		    "swapaccount=1)", missing);
	else
		hc_report(doctor_report, dr, HC_OK, "limits", "memory, swap, "
		    "pids and cpus enforceable (cgroup v%d)",
		    ei->ei_cgroup_version);
}

static void
engine_checks(const struct config *cfg, struct doctor *dr)
{
	struct dock_engine_info	 ei;
	struct dock_api		*da;
	enum dock_err		 e;

	if (!engine_connects(cfg->docker_socket, dr))
		return;
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK ||
	    (da = dock_api_new(cfg->docker_socket)) == NULL) {
		hc_report(doctor_report, dr, HC_FAIL, "engine", "cannot set "
		    "up the Engine API client");
		return;
	}
	if ((e = dock_engine(da, &ei)) != DOCK_OK) {
		hc_report(doctor_report, dr, HC_FAIL, "engine", "%s: %s: %s",
		    cfg->docker_socket, dock_err_to_string(e),
		    dock_api_last_error(da));
		dock_api_free(da);
		return;
	}
	check_engine_kind(&ei, cfg->docker_socket, dr);
	check_image(da, cfg, &ei, dr);
	check_runtime(cfg, &ei, dr);
	check_log_driver(cfg, &ei, dr);
	check_limits(&ei, dr);
	dock_api_free(da);
}

int
doctor_run(const char *path)
{
	struct config_errors	 errs;
	struct config		*cfg;
	struct doctor		 dr;
	struct hc_cred		*creds;
	size_t			 ncreds;
	uid_t			 uid = getuid();
	gid_t			 gid = getgid();

	memset(&dr, 0, sizeof(dr));
	memset(&errs, 0, sizeof(errs));
	log_init("doctor", 0);
	if ((cfg = config_load(path, &errs)) == NULL) {
		hc_report(doctor_report, &dr, HC_FAIL, "configuration",
		    "%s: %s%s (rtsandboxd -n -f %s lists every problem)", path,
		    errs.n > 0 ? errs.lines[0] : "not valid",
		    errs.n > 1 ? ", and more" : "", path);
		config_errors_free(&errs);
		hostcheck_user(uid, gid, doctor_report, &dr);
		hostcheck_groups(uid, gid, NULL, doctor_report, &dr);
		hostcheck_landlock(doctor_report, &dr);
		hostcheck_seccomp(doctor_report, &dr);
		hostcheck_userns(0, doctor_report, &dr);
		printf("%zu failed, %zu warned\n", dr.dr_fail, dr.dr_warn);
		return 1;
	}
	if (errs.nwarn > 0)
		hc_report(doctor_report, &dr, HC_WARN, "configuration",
		    "%s: %s", path, errs.warnings[0]);
	else
		hc_report(doctor_report, &dr, HC_OK, "configuration", "%s",
		    path);
	config_errors_free(&errs);
	hostcheck_user(uid, gid, doctor_report, &dr);
	hostcheck_groups(uid, gid, cfg->docker_socket, doctor_report, &dr);
	engine_checks(cfg, &dr);
	hostcheck_landlock(doctor_report, &dr);
	hostcheck_seccomp(doctor_report, &dr);
	hostcheck_userns(cfg->empty_root_optional, doctor_report, &dr);
	hostcheck_state_dir_bot(cfg->state_dir, uid, cfg->bot_group,
	    cfg->bot_gid, doctor_report, &dr);
	if (cfg->upstream_credential_file != NULL)
		hostcheck_credential("upstream.credential_file",
		    cfg->upstream_credential_file, uid, doctor_report, &dr);
	if (cfg->mcp_credential_file != NULL)
		hostcheck_credential("mcp.credential_file",
		    cfg->mcp_credential_file, uid, doctor_report, &dr);
	if ((creds = config_hc_creds(cfg, &ncreds)) != NULL) {
		hostcheck_credential_list("upstream.credentials", creds,
		    ncreds, uid, doctor_report, &dr);
		config_hc_creds_free(creds, ncreds);
	}
	hostcheck_control_socket(cfg->control_socket, uid, doctor_report, &dr);
	hostcheck_socket_paths(cfg->control_socket, cfg->docker_socket,
	    config_max_segment_len(cfg), doctor_report, &dr);
	config_free(cfg);
	printf("%zu failed, %zu warned\n", dr.dr_fail, dr.dr_warn);
	return dr.dr_fail > 0 ? 1 : 0;
}

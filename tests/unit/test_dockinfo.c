/*
 * dockerd-client/dockinfo.c: the engine's answers about itself, as Docker
 * 20.10 and Podman 4.3 give them, and every way they can be wrong.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockinfo.h"

#define S(lit)	(lit), (sizeof(lit) - 1)

/* Docker 20.10's GET /version, trimmed. */
static const char docker_version[] =
    "{\"Platform\":{\"Name\":\"\"},\"Components\":[{\"Name\":\"Engine\","
    "\"Version\":\"20.10.24+dfsg1\"},{\"Name\":\"containerd\","
    "\"Version\":\"1.6.20~ds1\"}],\"Version\":\"20.10.24+dfsg1\","
    "\"ApiVersion\":\"1.41\",\"MinAPIVersion\":\"1.12\","
    "\"Os\":\"linux\"}";

/* Podman 4.3's, trimmed. */
static const char podman_version[] =
    "{\"Platform\":{\"Name\":\"linux/amd64/debian-12\"},\"Components\":["
    "{\"Name\":\"Podman Engine\",\"Version\":\"4.3.1\"},{\"Name\":\"Conmon\","
    "\"Version\":\"conmon version 2.1.6\"}],\"Version\":\"4.3.1\","
    "\"ApiVersion\":\"1.41\",\"MinAPIVersion\":\"1.24\"}";

static const char docker_info[] =
    "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":"
    "\"/usr/bin/runsc\",\"runtimeArgs\":[\"--host-uds=open\","
    "\"--network=none\"]}},\"DefaultRuntime\":\"runc\",\"CgroupVersion\":"
    "\"1\",\"MemoryLimit\":true,\"SwapLimit\":true,\"PidsLimit\":true,"
    "\"CpuCfsQuota\":true,\"SecurityOptions\":[\"name=seccomp,profile="
    "default\"]}";

static const char podman_libpod_info[] =
    "{\"host\":{\"cgroupManager\":\"cgroupfs\",\"cgroupVersion\":\"v1\","
    "\"cgroupControllers\":[],\"security\":{\"rootless\":true,"
    "\"seccompEnabled\":true}},\"version\":{\"Version\":\"4.3.1\"}}";

START_TEST(version_docker)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(S(docker_version), &ei), 0);
	ck_assert_int_eq(ei.ei_engine, DOCK_ENGINE_DOCKER);
	ck_assert_str_eq(ei.ei_name, "Engine");
	ck_assert_str_eq(ei.ei_version, "20.10.24+dfsg1");
	ck_assert_str_eq(ei.ei_api_version, "1.41");
	ck_assert_str_eq(ei.ei_min_api_version, "1.12");
	ck_assert_int_eq(ei.ei_api_ok, 1);
	/* Nothing of /info is said by /version. */
	ck_assert_int_eq(ei.ei_rootless, -1);
	ck_assert_int_eq(ei.ei_cgroup_version, -1);
}
END_TEST

/* Plugins.Log: the drivers docker.log_driver may name. */
START_TEST(info_log_drivers)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(S(docker_info), &ei), 0);
	ck_assert_int_eq(ei.ei_log_local, -1);
	ck_assert_int_eq(ei.ei_log_journald, -1);
	ck_assert_int_eq(dock_parse_info(S("{\"Plugins\":{\"Log\":["
	    "\"json-file\",\"journald\",\"local\",7]}}"), &ei), 0);
	ck_assert_int_eq(ei.ei_log_local, 1);
	ck_assert_int_eq(ei.ei_log_journald, 1);
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(S("{\"Plugins\":{\"Log\":["
	    "\"journald2\",\"Local\"]}}"), &ei), 0);
	ck_assert_int_eq(ei.ei_log_local, 0);
	ck_assert_int_eq(ei.ei_log_journald, 0);
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(S("{\"Plugins\":{\"Log\":"
	    "\"journald\"}}"), &ei), 0);
	ck_assert_int_eq(ei.ei_log_journald, -1);
}
END_TEST

START_TEST(version_podman)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(S(podman_version), &ei), 0);
	ck_assert_int_eq(ei.ei_engine, DOCK_ENGINE_PODMAN);
	ck_assert_str_eq(ei.ei_name, "Podman Engine");
	ck_assert_str_eq(ei.ei_version, "4.3.1");
	ck_assert_int_eq(ei.ei_api_ok, 1);
}
END_TEST

static int
api_ok(const char *json)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(json, strlen(json), &ei), 0);
	return ei.ei_api_ok;
}

START_TEST(version_api_range)
{
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.41\"}"), 1);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.52\","
	    "\"MinAPIVersion\":\"1.41\"}"), 1);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.52\","
	    "\"MinAPIVersion\":\"1.42\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.40\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"2.0\","
	    "\"MinAPIVersion\":\"1.24\"}"), 1);
	ck_assert_int_eq(api_ok("{}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":1.41}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.41.0\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\".41\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.4100\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"1.41\","
	    "\"MinAPIVersion\":\"x\"}"), 0);
	ck_assert_int_eq(api_ok("{\"ApiVersion\":\"-1.41\"}"), 0);
}
END_TEST

START_TEST(version_refusals)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(S("[]"), &ei), -1);
	ck_assert_int_eq(dock_parse_version(S("\"x\""), &ei), -1);
	ck_assert_int_eq(dock_parse_version(S("{"), &ei), -1);
	ck_assert_int_eq(dock_parse_version(S(""), &ei), -1);
	ck_assert_int_eq(dock_parse_version(NULL, 0, &ei), -1);
	/* Wrong types are not said; the rest is read. */
	ck_assert_int_eq(dock_parse_version(S("{\"Components\":7,"
	    "\"Version\":[1],\"ApiVersion\":\"1.41\"}"), &ei), 0);
	ck_assert_int_eq(ei.ei_engine, DOCK_ENGINE_DOCKER);
	ck_assert_str_eq(ei.ei_version, "");
	ck_assert_int_eq(ei.ei_api_ok, 1);
}
END_TEST

/* An engine's words reach a terminal: cut to fit, no control bytes. */
START_TEST(version_text_bounded)
{
	struct dock_engine_info	 ei;
	char			 json[512];

	(void)snprintf(json, sizeof(json), "{\"Version\":\"%0200d\","
	    "\"Components\":[{\"Name\":\"a\\u001b[31mb\\n\"}]}", 7);
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(json, strlen(json), &ei), 0);
	ck_assert_uint_eq(strlen(ei.ei_version), sizeof(ei.ei_version) - 1);
	ck_assert_str_eq(ei.ei_name, "a?[31mb?");
}
END_TEST

START_TEST(info_docker)
{
	struct dock_engine_info		 ei;
	const struct dock_runtime	*dr;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(S(docker_version), &ei), 0);
	ck_assert_int_eq(dock_parse_info(S(docker_info), &ei), 0);
	ck_assert_str_eq(ei.ei_default_runtime, "runc");
	ck_assert_uint_eq(ei.ei_nruntimes, 2);
	ck_assert_uint_eq(ei.ei_runtimes_seen, 2);
	ck_assert_ptr_nonnull(dr = dock_engine_runtime(&ei, "runsc"));
	ck_assert_str_eq(dr->dr_path, "/usr/bin/runsc");
	ck_assert_uint_eq(dr->dr_argc, 2);
	ck_assert_str_eq(dr->dr_argv[1], "--network=none");
	ck_assert_ptr_nonnull(dr = dock_engine_runtime(&ei, "runc"));
	ck_assert_uint_eq(dr->dr_argc, 0);
	ck_assert_ptr_null(dock_engine_runtime(&ei, "kata"));
	ck_assert_ptr_null(dock_engine_runtime(&ei, "run"));
	ck_assert_int_eq(ei.ei_cgroup_version, 1);
	ck_assert_int_eq(ei.ei_memory_limit, 1);
	ck_assert_int_eq(ei.ei_swap_limit, 1);
	ck_assert_int_eq(ei.ei_pids_limit, 1);
	ck_assert_int_eq(ei.ei_cpu_quota, 1);
	ck_assert_int_eq(ei.ei_rootless, 0);
	ck_assert_int_eq(ei.ei_controllers, -1);

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(S("{\"CgroupVersion\":\"2\","
	    "\"MemoryLimit\":false,\"PidsLimit\":\"yes\",\"SecurityOptions\":"
	    "[\"name=seccomp,profile=default\",\"name=rootless\"]}"), &ei), 0);
	ck_assert_int_eq(ei.ei_cgroup_version, 2);
	ck_assert_int_eq(ei.ei_memory_limit, 0);
	ck_assert_int_eq(ei.ei_pids_limit, -1);
	ck_assert_int_eq(ei.ei_rootless, 1);
	ck_assert_str_eq(ei.ei_default_runtime, "");
	ck_assert_uint_eq(ei.ei_nruntimes, 0);
}
END_TEST

START_TEST(info_runtime_names)
{
	struct dock_engine_info	 ei;
	char			*json, *p;
	size_t			 i, sz = 64 * 64 + 256;

	dock_engine_info_init(&ei);
	/* Names that could never be configured are not kept. */
	ck_assert_int_eq(dock_parse_info(S("{\"DefaultRuntime\":\"-x\","
	    "\"Runtimes\":{\"a b\":{},\"/bin/sh\":{},\"ok\":{\"path\":1,"
	    "\"runtimeArgs\":[1,\"--x\"]},\"\":{}}}"), &ei), 0);
	ck_assert_str_eq(ei.ei_default_runtime, "");
	ck_assert_uint_eq(ei.ei_nruntimes, 1);
	ck_assert_str_eq(ei.ei_runtimes[0].dr_name, "ok");
	ck_assert_str_eq(ei.ei_runtimes[0].dr_path, "");
	ck_assert_uint_eq(ei.ei_runtimes[0].dr_argc, 1);
	ck_assert_int_eq(ei.ei_runtimes[0].dr_args_cut, 1);

	/* At most DOCK_RUNTIMES_MAX kept, every one counted. */
	json = malloc(sz);
	ck_assert_ptr_nonnull(json);
	p = json + sprintf(json, "{\"Runtimes\":{");
	for (i = 0; i < DOCK_RUNTIMES_MAX + 5; i++)
		p += sprintf(p, "%s\"r%zu\":{}", i > 0 ? "," : "", i);
	sprintf(p, "}}");
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(json, strlen(json), &ei), 0);
	ck_assert_uint_eq(ei.ei_nruntimes, DOCK_RUNTIMES_MAX);
	ck_assert_uint_eq(ei.ei_runtimes_seen, DOCK_RUNTIMES_MAX + 5);
	free(json);
}
END_TEST

START_TEST(info_runtime_args_bounded)
{
	struct dock_engine_info	 ei;
	char			 json[8192], *p;
	size_t			 i;

	p = json + sprintf(json, "{\"Runtimes\":{\"r\":{\"runtimeArgs\":[");
	for (i = 0; i < DOCK_RUNTIME_ARGC_MAX + 2; i++)
		p += sprintf(p, "%s\"-a%zu\"", i > 0 ? "," : "", i);
	p += sprintf(p, ",\"%0*d\"]}}}", (int)DOCK_RUNTIME_ARG_MAX, 0);
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(json, strlen(json), &ei), 0);
	ck_assert_uint_eq(ei.ei_runtimes[0].dr_argc, DOCK_RUNTIME_ARGC_MAX);
	ck_assert_int_eq(ei.ei_runtimes[0].dr_args_cut, 1);

	/* One byte under the bound fits. */
	sprintf(json, "{\"Runtimes\":{\"r\":{\"runtimeArgs\":[\"%0*d\"]}}}",
	    (int)DOCK_RUNTIME_ARG_MAX - 1, 0);
	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_info(json, strlen(json), &ei), 0);
	ck_assert_uint_eq(ei.ei_runtimes[0].dr_argc, 1);
	ck_assert_int_eq(ei.ei_runtimes[0].dr_args_cut, 0);
}
END_TEST

START_TEST(info_podman)
{
	struct dock_engine_info	 ei;

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_version(S(podman_version), &ei), 0);
	/* Podman's compatible /info never says rootless. */
	ck_assert_int_eq(dock_parse_info(S("{\"SecurityOptions\":"
	    "[\"name=rootless\"],\"CgroupVersion\":\"1\"}"), &ei), 0);
	ck_assert_int_eq(ei.ei_rootless, -1);
	ck_assert_int_eq(dock_parse_libpod_info(S(podman_libpod_info), &ei),
	    0);
	ck_assert_int_eq(ei.ei_rootless, 1);
	ck_assert_int_eq(ei.ei_cgroup_version, 1);
	ck_assert_int_eq(ei.ei_controllers, 0);

	ck_assert_int_eq(dock_parse_libpod_info(S("{\"host\":{"
	    "\"cgroupVersion\":\"v2\",\"cgroupControllers\":[\"cpuset\","
	    "\"cpu\",\"io\",\"memory\",\"pids\",7],\"security\":{\"rootless\":"
	    "false}}}"), &ei), 0);
	ck_assert_int_eq(ei.ei_rootless, 0);
	ck_assert_int_eq(ei.ei_cgroup_version, 2);
	ck_assert_int_eq(ei.ei_controllers, DOCK_CG_ALL);

	dock_engine_info_init(&ei);
	ck_assert_int_eq(dock_parse_libpod_info(S("{\"host\":{"
	    "\"cgroupVersion\":\"v3\",\"cgroupControllers\":\"memory\"}}"),
	    &ei), 0);
	ck_assert_int_eq(ei.ei_cgroup_version, -1);
	ck_assert_int_eq(ei.ei_controllers, -1);
	ck_assert_int_eq(dock_parse_libpod_info(S("[]"), &ei), -1);
	ck_assert_int_eq(dock_parse_info(S("null"), &ei), -1);
}
END_TEST

START_TEST(image_tags)
{
	struct dock_image_info	 im;

	ck_assert_int_eq(dock_parse_image(S("{\"Id\":\"sha256:4f98\","
	    "\"RepoTags\":[\"rtsandbox-worker:latest\"]}"),
	    "rtsandbox-worker:latest", &im), 0);
	ck_assert_str_eq(im.im_id, "sha256:4f98");
	ck_assert_int_eq(im.im_tagged, 1);
	ck_assert_str_eq(im.im_tag, "");
	/* Podman's name for a loaded image is not the one asked. */
	ck_assert_int_eq(dock_parse_image(S("{\"Id\":\"sha256:4f98\","
	    "\"RepoTags\":[\"localhost/rtsandbox-worker:latest\"]}"),
	    "rtsandbox-worker:latest", &im), 0);
	ck_assert_int_eq(im.im_tagged, 0);
	ck_assert_str_eq(im.im_tag, "localhost/rtsandbox-worker:latest");
	ck_assert_int_eq(dock_parse_image(S("{\"Id\":\"sha256:1\","
	    "\"RepoTags\":null}"), "a", &im), 0);
	ck_assert_int_eq(im.im_tagged, 0);
	ck_assert_int_eq(dock_parse_image(S("{\"RepoTags\":[\"a\"]}"), "a",
	    &im), -1);
	ck_assert_int_eq(dock_parse_image(S("{\"Id\":7}"), "a", &im), -1);
	ck_assert_int_eq(dock_parse_image(S("[]"), "a", &im), -1);
}
END_TEST

static const char *
problem(const char *path, const char *const *argv)
{
	static struct dock_runtime	 dr;

	memset(&dr, 0, sizeof(dr));
	(void)snprintf(dr.dr_path, sizeof(dr.dr_path), "%s", path);
	for (; *argv != NULL; argv++)
		(void)snprintf(dr.dr_argv[dr.dr_argc++], DOCK_RUNTIME_ARG_MAX,
		    "%s", *argv);
	return dock_runtime_problem(&dr);
}

#define A(...)	((const char *const[]){ __VA_ARGS__, NULL })
#define NONE	((const char *const[]){ NULL })

START_TEST(runtime_problems)
{
	ck_assert_ptr_null(problem("runc", NONE));
	ck_assert_ptr_null(problem("/usr/bin/crun", NONE));
	ck_assert_ptr_null(problem("/usr/bin/runsc",
	    A("--host-uds=open", "--network=none")));
	ck_assert_ptr_null(problem("runsc", A("-host-uds=all", "-network",
	    "none")));
	ck_assert_ptr_null(problem("/opt/runsc", A("--network=none",
	    "--platform=systrap", "--host-uds", "open")));
	ck_assert_ptr_nonnull(strstr(problem("/usr/bin/runsc", NONE),
	    "--host-uds=open"));
	ck_assert_ptr_nonnull(strstr(problem("runsc", A("--network=none")),
	    "--host-uds=open"));
	ck_assert_ptr_nonnull(strstr(problem("runsc",
	    A("--host-uds=create", "--network=none")), "--host-uds=open"));
	ck_assert_ptr_nonnull(strstr(problem("runsc", A("host-uds=open",
	    "--network=none")), "--host-uds=open"));
	ck_assert_ptr_nonnull(strstr(problem("runsc", A("--host-uds=open")),
	    "--network=none"));
	ck_assert_ptr_nonnull(strstr(problem("runsc", A("--host-uds=open",
	    "--network=sandbox")), "--network=none"));
	/* A flag's value as the last argument has nothing after it. */
	ck_assert_ptr_nonnull(problem("runsc", A("--network=none",
	    "--host-uds")));
	/* Only a binary named runsc is gVisor here. */
	ck_assert_ptr_null(problem("/usr/bin/notrunsc", NONE));
	ck_assert_ptr_null(problem("/usr/bin/runsc-wrapper", NONE));
}
END_TEST

static Suite *
dockinfo_suite(void)
{
	Suite	*s = suite_create("dockinfo");
	TCase	*tc;

	tc = tcase_create("version");
	tcase_add_test(tc, version_docker);
	tcase_add_test(tc, version_podman);
	tcase_add_test(tc, info_log_drivers);
	tcase_add_test(tc, version_api_range);
	tcase_add_test(tc, version_refusals);
	tcase_add_test(tc, version_text_bounded);
	suite_add_tcase(s, tc);
	tc = tcase_create("info");
	tcase_add_test(tc, info_docker);
	tcase_add_test(tc, info_runtime_names);
	tcase_add_test(tc, info_runtime_args_bounded);
	tcase_add_test(tc, info_podman);
	tcase_add_test(tc, image_tags);
	tcase_add_test(tc, runtime_problems);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(dockinfo_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

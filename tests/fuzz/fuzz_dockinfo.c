/*
 * The engine's answers about itself (dockinfo.c), one input read as each of
 * them: whatever is accepted must be bounded, free of control characters,
 * and hold only runtime names a configuration could name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockinfo.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

static void
check_text(const char *s, size_t cap)
{
	size_t	 i, n = strnlen(s, cap);

	CHECK(n < cap);
	for (i = 0; i < n; i++)
		CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

static void
check_info(const struct dock_engine_info *ei)
{
	const struct dock_runtime	*dr;
	size_t				 i, k;

	check_text(ei->ei_name, sizeof(ei->ei_name));
	check_text(ei->ei_version, sizeof(ei->ei_version));
	check_text(ei->ei_api_version, sizeof(ei->ei_api_version));
	check_text(ei->ei_min_api_version, sizeof(ei->ei_min_api_version));
	check_text(ei->ei_default_runtime, sizeof(ei->ei_default_runtime));
	CHECK(ei->ei_default_runtime[0] == '\0' ||
	    valid_runtime_name(ei->ei_default_runtime,
	    strlen(ei->ei_default_runtime)));
	CHECK(ei->ei_nruntimes <= DOCK_RUNTIMES_MAX);
	CHECK(ei->ei_nruntimes <= ei->ei_runtimes_seen);
	for (i = 0; i < ei->ei_nruntimes; i++) {
		dr = &ei->ei_runtimes[i];
		CHECK(valid_runtime_name(dr->dr_name, strlen(dr->dr_name)));
		CHECK(dock_engine_runtime(ei, dr->dr_name) != NULL);
		check_text(dr->dr_path, sizeof(dr->dr_path));
		CHECK(dr->dr_argc <= DOCK_RUNTIME_ARGC_MAX);
		for (k = 0; k < dr->dr_argc; k++)
			check_text(dr->dr_argv[k], DOCK_RUNTIME_ARG_MAX);
		(void)dock_runtime_problem(dr);
	}
	CHECK(ei->ei_cgroup_version == -1 || ei->ei_cgroup_version == 1 ||
	    ei->ei_cgroup_version == 2);
	CHECK(ei->ei_rootless >= -1 && ei->ei_rootless <= 1);
	CHECK(ei->ei_memory_limit >= -1 && ei->ei_memory_limit <= 1);
	CHECK(ei->ei_controllers == -1 ||
	    (ei->ei_controllers & ~(int)DOCK_CG_ALL) == 0);
	CHECK(ei->ei_api_ok == 0 || ei->ei_api_ok == 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dock_engine_info	 ei;
	struct dock_image_info	 im;
	const char		*buf = (const char *)data;

	dock_engine_info_init(&ei);
	(void)dock_parse_version(buf, size, &ei);
	(void)dock_parse_info(buf, size, &ei);
	(void)dock_parse_libpod_info(buf, size, &ei);
	check_info(&ei);
	if (dock_parse_image(buf, size, "rtsandbox-worker:latest", &im) == 0) {
		check_text(im.im_id, sizeof(im.im_id));
		check_text(im.im_tag, sizeof(im.im_tag));
		CHECK(im.im_tagged == 0 || im.im_tagged == 1);
	}
	return 0;
}

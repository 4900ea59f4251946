/*
 * libFuzzer target: the configuration parser over arbitrary bytes, with
 * every line it reports and every structure it builds freed again.  An
 * accepted configuration must be complete: a refusal that forgot to say
 * why would leave a field unset.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
complete(const struct config *cfg)
{
	size_t	 i, j;

	if (cfg->state_dir == NULL || cfg->control_socket == NULL ||
	    cfg->image == NULL || cfg->upstream_url == NULL ||
	    (cfg->upstream_credential_file == NULL) ==
	    !cfg->upstream_credential_hook ||
	    cfg->docker_socket == NULL || cfg->container_prefix == NULL ||
	    cfg->label_channel == NULL || cfg->label_profile == NULL ||
	    cfg->time_zone == NULL || cfg->default_thinking == NULL ||
	    cfg->has_control_group != (cfg->control_group != NULL) ||
	    (cfg->nmcp_servers > 0 && cfg->mcp_credential_file == NULL) ||
	    cfg->nprofiles == 0)
		return 0;
	for (i = 0; i < cfg->nprofiles; i++) {
		if (cfg->profiles[i].model == NULL ||
		    config_profile(cfg, cfg->profiles[i].name) !=
		    &cfg->profiles[i])
			return 0;
		for (j = 0; j < cfg->profiles[i].nmcp; j++)
			if (config_mcp_server(cfg,
			    cfg->profiles[i].mcp[j]) == NULL)
				return 0;
	}
	for (i = 0; i < cfg->nmcp_servers; i++)
		if (cfg->mcp_servers[i].name == NULL ||
		    cfg->mcp_servers[i].url == NULL)
			return 0;
	return config_max_segment_len(cfg) <= 100;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_errors	 errs = { 0 };
	struct config		*cfg;

	cfg = config_parse((const char *)data, size, &errs);
	if (cfg != NULL && (errs.n != 0 || !complete(cfg)))
		__builtin_trap();
	if (cfg == NULL && errs.n == 0)
		__builtin_trap();
	config_free(cfg);
	config_errors_free(&errs);
	return 0;
}

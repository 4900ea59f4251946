/*
 * libFuzzer target: the configuration parser over arbitrary bytes, with
 * every line it reports and every structure it builds freed again.  An
 * accepted configuration must be complete: a refusal that forgot to say
 * why would leave a field unset, or the model without a credential.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "limits.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* upstream.credentials: every entry whole, sorted, no key twice. */
static int
creds_complete(const struct config_cred *v, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (v[i].key == NULL || v[i].key[0] == '\0' ||
		    v[i].file == NULL || v[i].file[0] != '/' ||
		    (i > 0 && strcmp(v[i - 1].key, v[i].key) >= 0))
			return 0;
	return 1;
}

static int
complete(const struct config *cfg)
{
	const char	*dirs[CRED_DIRS_MAX + 1];
	size_t		 i, j;

	/* the model's credential: a file, the hook, or files by channel and
	 * speaker alone (fallback "none"), and no two of these */
	if ((cfg->upstream_credential_file != NULL) +
	    cfg->upstream_credential_hook + cfg->cred_fallback_none != 1 ||
	    (cfg->upstream_credential_hook && cfg->has_credentials) ||
	    !creds_complete(cfg->cred_channels, cfg->ncred_channels) ||
	    !creds_complete(cfg->cred_speakers, cfg->ncred_speakers) ||
	    cfg->ncred_channels > CRED_MAP_MAX ||
	    cfg->ncred_speakers > CRED_MAP_MAX ||
	    config_cred_dirs(cfg, dirs, CRED_DIRS_MAX) > CRED_DIRS_MAX)
		return 0;
	if (cfg->state_dir == NULL || cfg->control_socket == NULL ||
	    cfg->image == NULL || cfg->upstream_url == NULL ||
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

/* rtsandboxctl config --from-options: 0.7.3's options as rtsandboxd.json. */
#ifndef RTSANDBOX_CTL_FROMOPTS_H
#define RTSANDBOX_CTL_FROMOPTS_H

/*
 * The configuration for the options in path, on stdout; notes and errors
 * (naming the option) on stderr.  The three paths may be NULL for their
 * defaults.  0, or 1 after an error.
 */
int	fromopts_run(const char *path, const char *credential,
	    const char *mcp_credential, const char *control_socket);

#endif

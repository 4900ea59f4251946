/*
 * POSIX ACLs as Linux keeps them in the system.posix_acl_access and
 * system.posix_acl_default extended attributes: the few the file guard
 * gives the chat bot's group (bot_group) on the directories it may reach.
 * Built and compared as bytes, so that no ACL library is needed and a
 * check is one getxattr(2).
 */
#ifndef RTSANDBOX_ACLX_H
#define RTSANDBOX_ACLX_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define ACLX_ACCESS		"system.posix_acl_access"
#define ACLX_DEFAULT		"system.posix_acl_default"

/* Permission bits of an entry. */
#define ACLX_R			4u
#define ACLX_W			2u
#define ACLX_X			1u

/* The header and at most six entries of 8 bytes. */
#define ACLX_MAX		(4 + 6 * 8)

/*
 * An ACL where the owner has owner, the owning group and others nothing,
 * group gid has group, and, unless user is NULL, the user *user has
 * user_perm; the mask is what the named entries have.  The bytes go to
 * buf (ACLX_MAX); their count is returned.
 */
size_t	aclx_build(uint8_t *buf, unsigned owner, gid_t gid, unsigned group,
	    const uid_t *user, unsigned user_perm);

/*
 * Mode bits an ACL of aclx_build() shows in st_mode (the group bits are
 * the mask's).
 */
mode_t	aclx_mode(unsigned owner, unsigned group, unsigned user_perm);

#endif

/*
 * The kernel's format (linux/posix_acl_xattr.h): a little-endian u32
 * version 2, then entries of u16 tag, u16 permissions and u32 id, sorted by
 * tag and then id; the id of an entry that names nobody is -1.  getxattr(2)
 * gives an ACL back in the same order, so bytes compare.
 */
#include <endian.h>
#include <string.h>

#include "aclx.h"

#define ACLX_VERSION		2u
#define ACLX_USER_OBJ		0x01u
#define ACLX_USER		0x02u
#define ACLX_GROUP_OBJ		0x04u
#define ACLX_GROUP		0x08u
#define ACLX_MASK		0x10u
#define ACLX_OTHER		0x20u
#define ACLX_UNDEFINED_ID	0xffffffffu

static size_t
aclx_entry(uint8_t *p, unsigned tag, unsigned perm, uint32_t id)
{
	uint16_t	 t = htole16((uint16_t)tag);
	uint16_t	 m = htole16((uint16_t)perm);
	uint32_t	 i = htole32(id);

	memcpy(p, &t, 2);
	memcpy(p + 2, &m, 2);
	memcpy(p + 4, &i, 4);
	return 8;
}

size_t
aclx_build(uint8_t *buf, unsigned owner, gid_t gid, unsigned group,
    const uid_t *user, unsigned user_perm)
{
	uint32_t	 v = htole32(ACLX_VERSION);
	size_t		 n = 0;

	memcpy(buf, &v, 4);
	n = 4;
	n += aclx_entry(buf + n, ACLX_USER_OBJ, owner & 7, ACLX_UNDEFINED_ID);
	if (user != NULL)
		n += aclx_entry(buf + n, ACLX_USER, user_perm & 7, *user);
	n += aclx_entry(buf + n, ACLX_GROUP_OBJ, 0, ACLX_UNDEFINED_ID);
	n += aclx_entry(buf + n, ACLX_GROUP, group & 7, gid);
	n += aclx_entry(buf + n, ACLX_MASK,
	    (group | (user != NULL ? user_perm : 0)) & 7, ACLX_UNDEFINED_ID);
	n += aclx_entry(buf + n, ACLX_OTHER, 0, ACLX_UNDEFINED_ID);
	return n;
}

mode_t
aclx_mode(unsigned owner, unsigned group, unsigned user_perm)
{
	return (mode_t)((owner & 7) << 6 | ((group | user_perm) & 7) << 3);
}

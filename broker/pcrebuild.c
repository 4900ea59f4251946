/*
 * The one call a precheck run's script may make (rtsandbox-protocol(7),
 * contract 0.7.11/0.7.13): a tools/call of a granted tool.  The script's
 * object is read with the checks of every rebuild (rebuild_parse()) and
 * only the tool's name and arguments go on, in an envelope of the
 * broker's: the script chooses neither the method, nor the id, nor any
 * other field.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"
#include "rebuild.h"

/* The script's own error text: refusals are all one answer. */
static int
refuse(char *err, size_t errlen, const char *why)
{
	if (errlen > 0) {
		(void)strncpy(err, why, errlen - 1);
		err[errlen - 1] = '\0';
	}
	return REBUILD_MCP_REFUSED;
}

static int
granted(const char *name, const char *const *tools, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (tools[i] != NULL && strcmp(tools[i], name) == 0)
			return 1;
	return 0;
}

/* {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,
 * "arguments":args}}, args taken out of the script's tree or {}. */
static cJSON *
envelope(const char *name, cJSON *params, cJSON *args)
{
	cJSON	*o, *p, *a;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    cJSON_AddNumberToObject(o, "id", 1) == NULL ||
	    cJSON_AddStringToObject(o, "method", "tools/call") == NULL ||
	    (p = cJSON_AddObjectToObject(o, "params")) == NULL ||
	    cJSON_AddStringToObject(p, "name", name) == NULL)
		goto fail;
	if (args != NULL)
		a = cJSON_DetachItemViaPointer(params, args);
	else if ((a = cJSON_CreateObject()) == NULL)
		goto fail;
	if (!cJSON_AddItemToObjectCS(p, "arguments", a)) {
		cJSON_Delete(a);
		goto fail;
	}
	return o;
 fail:
	cJSON_Delete(o);
	return NULL;
}

int
rebuild_precheck_call(const char *body, size_t len,
    const char *const *tools, size_t ntools, char **out, size_t *outlen,
    char *err, size_t errlen)
{
	cJSON	*root, *o = NULL, *method, *params, *name, *args;
	int	 nomem, r;

	*out = NULL;
	*outlen = 0;
	if (errlen > 0)
		err[0] = '\0';
	if (len > PRECHECK_REQUEST_MAX) {
		(void)refuse(err, errlen, "Request body too large");
		return REBUILD_TOO_LARGE;
	}
	if ((root = rebuild_parse(body, len, MCP_NODES_MAX, &nomem, err,
	    errlen)) == NULL)
		return nomem ? REBUILD_NOMEM : REBUILD_MCP_INVALID;

	r = REBUILD_MCP_REFUSED;
	if (!cJSON_IsObject(root)) {
		(void)refuse(err, errlen, "not an object");
		goto done;
	}
	method = cJSON_GetObjectItemCaseSensitive(root, "method");
	if (!cJSON_IsString(method) ||
	    strcmp(method->valuestring, "tools/call") != 0) {
		(void)refuse(err, errlen, "method is not tools/call");
		goto done;
	}
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	if (!cJSON_IsObject(params)) {
		(void)refuse(err, errlen, "params is not an object");
		goto done;
	}
	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	if (!cJSON_IsString(name) || !granted(name->valuestring, tools,
	    ntools)) {
		(void)refuse(err, errlen, "tool not granted");
		goto done;
	}
	/* Absent is {}; null, like any other value, is not an object. */
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (args != NULL && !cJSON_IsObject(args)) {
		(void)refuse(err, errlen, "arguments is not an object");
		goto done;
	}

	r = REBUILD_NOMEM;
	if ((o = envelope(name->valuestring, params, args)) == NULL)
		goto done;
	if ((*out = body_print(o)) == NULL)
		goto done;
	*outlen = strlen(*out);
	r = 0;
 done:
	cJSON_Delete(o);
	cJSON_Delete(root);
	return r;
}

/*
 * store_open.c - the one choice of the store's backend, at open, from
 * --store (SQLite, or etcd:// with a SQLite cache), and the checks of
 * that choice. The top of the store module: it knows both backends,
 * which know only the front (store.c).
 */
#include <errno.h>
#include <string.h>

#include "store_ops.h"

/* Whether `url` names a shared store: etcd://HOST:PORT[,HOST:PORT...]. */
static int url_shared(const char *url)
{
	return url != NULL && strncmp(url, "etcd://", 7) == 0;
}

int store_open_config(struct store **out, const struct store_config *c,
		      struct uv_loop_s *loop)
{
	if (c->url == NULL || strcmp(c->url, "sqlite") == 0)
		return store_open(out, c->path);
	if (url_shared(c->url))
		return store__etcd_open(out, c, loop);
	*out = NULL;
	return -EINVAL;
}

int store_config_check(const struct store_config *c, const char **why)
{
	int shared = url_shared(c->url);

	*why = NULL;
	if (c->url != NULL && !shared && strcmp(c->url, "sqlite") != 0)
		*why = "--store wants sqlite or "
		       "etcd://HOST:PORT[,HOST:PORT...]";
	else if (shared && c->url[7] == '\0')
		*why = "--store etcd:// wants at least one HOST:PORT";
	else if (shared && c->cluster == NULL)
		*why = "--store etcd://... wants --cluster NAME";
	else if (!shared && (c->cluster || c->ca || c->cert || c->key))
		*why = "--cluster and --etcd-* go with --store etcd://...";
	else if (!c->cert != !c->key)
		*why = "--etcd-cert and --etcd-key go together";
	return *why != NULL ? -EINVAL : shared;
}

int store_config_valid(const struct store_config *c)
{
	const char *why;
	int shared = store_config_check(c, &why);

	if (shared == 0)
		return c->url == NULL && !c->force;
	return shared == 1 && c->path == NULL;
}

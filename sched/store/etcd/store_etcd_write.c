/*
 * store_etcd_write.c - the shared store's writes of rows and code/
 * (store_etcd_internal.h): one txn whose compares make it a
 * compare-and-set, done once the watch has brought it back.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../runtime/base/rt.h"
#include "etcd_keys.h"
#include "../../model/staged.h"
#include "store_etcd.h"
#include "store_etcd_internal.h"

/* ============================================================== writes */

const char *store_etcd__keep(struct txn *t, const char *s, size_t n)
{
	char *d;

	if (t->nstrs == t->capstrs) {
		size_t cap = t->capstrs ? t->capstrs * 2 : 16;
		char **v = realloc(t->strs, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		t->strs = v;
		t->capstrs = cap;
	}
	d = malloc(n + 1);
	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	t->strs[t->nstrs++] = d;
	return d;
}

static int grow(struct txn *t)
{
	size_t cap = t->cap ? t->cap * 2 : 8;
	struct etcd_cmp *c = realloc(t->cmp, cap * sizeof(*c));
	struct etcd_op *o, *f;

	if (c == NULL)
		return -ENOMEM;
	t->cmp = c;
	o = realloc(t->ops, cap * sizeof(*o));
	if (o == NULL)
		return -ENOMEM;
	t->ops = o;
	f = realloc(t->fail, cap * sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	t->fail = f;
	assert(cap > t->cap);
	t->cap = cap;
	return 0;
}

static int add_str(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (nv[*n] == NULL)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Adds a compare of `key` (up to `end`, or NULL) and, should it fail, a
 * read of it. `must_exist`: a key the write expects to be there. */
static int cmp_add(struct txn *t, const char *key, const char *end,
		   enum etcd_target target, enum etcd_cmp_result res,
		   int64_t number, int must_exist)
{
	int rc = 0;

	/* Each compare has its read on failure: the two lists go together. */
	assert(t->ncmp == t->nfail && t->ncmp <= t->cap);
	if (t->ncmp == t->cap || t->nfail == t->cap)
		rc = grow(t);
	if (rc < 0)
		return rc;
	key = store_etcd__keep(t, key, strlen(key));
	if (end != NULL)
		end = store_etcd__keep(t, end, strlen(end));
	if (key == NULL)
		return -ENOMEM;
	memset(&t->cmp[t->ncmp], 0, sizeof(t->cmp[0]));
	t->cmp[t->ncmp].key = key;
	t->cmp[t->ncmp].range_end = end;
	t->cmp[t->ncmp].target = target;
	t->cmp[t->ncmp].result = res;
	t->cmp[t->ncmp].number = number;
	t->ncmp++;
	memset(&t->fail[t->nfail], 0, sizeof(t->fail[0]));
	t->fail[t->nfail].kind = ETCD_OP_RANGE;
	t->fail[t->nfail].key = key;
	t->fail[t->nfail].range_end = end;
	t->nfail++;
	if (must_exist)
		rc = add_str(&t->w->present, &t->w->npresent, key);
	return rc;
}

static int op_add(struct txn *t, enum etcd_op_kind kind, const char *key,
		  const char *end, const char *value, size_t len)
{
	assert(t->nops <= t->cap);
	if (t->nops == t->cap && grow(t) < 0)
		return -ENOMEM;
	memset(&t->ops[t->nops], 0, sizeof(t->ops[0]));
	t->ops[t->nops].kind = kind;
	t->ops[t->nops].key = store_etcd__keep(t, key, strlen(key));
	t->ops[t->nops].range_end = end ? store_etcd__keep(t, end, strlen(end))
					: NULL;
	t->ops[t->nops].value = value ? store_etcd__keep(t, value, len) : NULL;
	t->ops[t->nops].value_len = len;
	if (t->ops[t->nops].key == NULL || (value && !t->ops[t->nops].value))
		return -ENOMEM;
	t->nops++;
	return 0;
}

/* The prefix of the children of row `r` (a tenant's namespaces, a
 * namespace's functions), and its range end. */
static int children_range(const struct store_etcd *e, const struct store_row *r,
			  struct rt_buf *p, char **end)
{
	int rc;

	rt_buf_reset(p);
	rc = etcd_keys_kind_prefix(e->cluster,
				   r->kind == STORE_TENANT ? ETCD_KEYS_NAMESPACE
							   : ETCD_KEYS_FUNCTION,
				   p);
	if (rc == 0)
		rc = rt_buf_printf(p, "%s/", r->tenant);
	if (rc == 0 && r->kind == STORE_NAMESPACE)
		rc = rt_buf_printf(p, "%s/", r->ns);
	if (rc == 0) {
		*end = malloc(p->len + 2);
		if (*end == NULL)
			return -ENOMEM;
		etcd_prefix_end(p->data, *end);
	}
	return rc < 0 ? rc : 0;
}

/* The compares and operations of one change. */
static int txn_change(struct store_etcd *e, struct txn *t,
		      const struct store_change *c)
{
	struct rt_buf key = { 0 }, val = { 0 }, pk = { 0 }, cp = { 0 };
	const struct store_row *r = &c->row;
	struct known *k;
	char *end = NULL;
	int rc;

	rc = etcd_keys_row(e->cluster, r, &key,
			   c->op == STORE_DELETE ? NULL : &val);
	if (rc < 0)
		goto out;
	k = rt_map_get(&e->known, key.data);
	switch (c->op) {
	case STORE_INSERT:
		rc = cmp_add(t, key.data, NULL, ETCD_VERSION, ETCD_EQUAL, 0, 0);
		if (rc == 0)
			rc = store_etcd__parent_key(e, r, &pk);
		if (rc == 0 && pk.len > 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_UPDATE:
	case STORE_OWNER:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_DELETE:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0 && r->kind != STORE_FUNCTION) {
			rc = children_range(e, r, &cp, &end);
			if (rc == 0)
				rc = cmp_add(t, cp.data, end, ETCD_VERSION,
					     ETCD_EQUAL, 0, 0);
		}
		if (rc == 0)
			rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	}
out:
	free(end);
	rt_buf_free(&key);
	rt_buf_free(&val);
	rt_buf_free(&pk);
	rt_buf_free(&cp);
	return rc;
}

static void on_txn(void *arg, const struct etcd_answer *a)
{
	struct waiter *w = arg;
	struct store_etcd *e = w->e;
	size_t i, j;
	int found;

	if (a->rc < 0) {
		store_etcd__set_error(e, "a write", a->rc, a->error);
		if (w->done != NULL)
			w->done(w->arg, a->rc == -EAGAIN ? -EAGAIN : -EIO);
		store_etcd__waiter_free(w);
		return;
	}
	if (a->succeeded)
		w->rev = a->header.revision;
	else {
		/* Lost: wait until the model has what won, then the write is
		 * checked against it again. */
		w->lost = 1;
		for (i = 0; i < a->nkvs; i++)
			if (a->kvs[i].mod_revision > w->rev)
				w->rev = a->kvs[i].mod_revision;
		for (i = 0; i < w->npresent; i++) {
			for (found = 0, j = 0; j < a->nkvs && !found; j++)
				found = strcmp(a->kvs[j].key, w->present[i]) ==
					0;
			if (!found &&
			    add_str(&w->absent, &w->nabsent, w->present[i]) < 0)
				w->deadline = 0; /* out of memory: ends */
		}
	}
	w->next = e->waiters;
	e->waiters = w;
	store_etcd__check_waiters(e, 0, 0);
}

/* A function's code/ goes with it: its entries and revision are deleted
 * in the txn that deletes its row. */
static int txn_code_of_fn(struct store_etcd *e, struct txn *t,
			  const struct store_row *r)
{
	struct rt_buf p = { 0 }, k = { 0 };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_CODE_REVISION };
	char *end = NULL;
	int rc;

	rc = etcd_keys_code_prefix(e->cluster, r->tenant, r->ns, r->name, &p);
	if (rc == 0) {
		end = malloc(p.len + 2);
		rc = end ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		etcd_prefix_end(p.data, end);
		rc = op_add(t, ETCD_OP_DELETE, p.data, end, NULL, 0);
	}
	rec.code.tenant = r->tenant;
	rec.code.ns = r->ns;
	rec.code.fn = r->name;
	rec.code.hash = "";
	if (rc == 0)
		rc = etcd_keys_encode(e->cluster, &rec, &k, NULL);
	if (rc == 0)
		rc = op_add(t, ETCD_OP_DELETE, k.data, NULL, NULL, 0);
	free(end);
	rt_buf_free(&p);
	rt_buf_free(&k);
	return rc;
}

/* The key of the directory that holds entry `f` of code/ ("": code/
 * itself, which has none). */
static int code_parent_key(const struct store_etcd *e,
			   const struct store_code_file *f, struct rt_buf *out)
{
	const char *slash = strrchr(f->path, '/');
	int rc;

	rt_buf_reset(out);
	if (slash == NULL)
		return rt_buf_puts(out, "");
	rc = etcd_keys_code_prefix(e->cluster, f->tenant, f->ns, f->fn, out);
	if (rc == 0)
		rc = etcd_keys_path(f->path, (size_t)(slash - f->path), out);
	return rc;
}

/* The compares and operations of one change of code/. */
static int txn_code(struct store_etcd *e, struct txn *t,
		    const struct store_code_op *c)
{
	struct rt_buf key = { 0 }, val = { 0 }, pk = { 0 };
	struct etcd_keys_rec rec;
	struct store_row fr;
	struct known *k;
	char *end = NULL;
	int rc;

	memset(&rec, 0, sizeof(rec));
	if (c->op == STORE_CODE_PUT || c->op == STORE_CODE_DEL) {
		rec.kind = ETCD_KEYS_CODE_FILE;
		rec.file = c->file;
	} else {
		rec.kind = ETCD_KEYS_CODE_REVISION;
		rec.code = c->rev;
	}
	if (c->op == STORE_CODE_DEL || c->op == STORE_CODE_REV_DEL) {
		/* Only the key is made: a value need not be valid. */
		if (rec.kind == ETCD_KEYS_CODE_FILE && rec.file.hash == NULL)
			rec.file.hash = "";
		if (rec.kind == ETCD_KEYS_CODE_REVISION)
			rec.code.hash = "";
	}
	rc = etcd_keys_encode(
		e->cluster, &rec, &key,
		c->op == STORE_CODE_PUT || c->op == STORE_CODE_REV_PUT ? &val
								       : NULL);
	if (rc < 0)
		goto out;
	k = rt_map_get(&e->known, key.data);
	switch (c->op) {
	case STORE_CODE_PUT:
		/* Over what this controller has seen there, or where there
		 * is nothing; under a directory that exists (unless the same
		 * txn makes it), of a function that exists. */
		rc = k ? cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
				 k->mod, 1)
		       : cmp_add(t, key.data, NULL, ETCD_VERSION, ETCD_EQUAL, 0,
				 0);
		if (rc == 0 && !c->parent_in_txn)
			rc = code_parent_key(e, &c->file, &pk);
		if (rc == 0 && !c->parent_in_txn && pk.len > 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		memset(&fr, 0, sizeof(fr));
		fr.kind = STORE_FUNCTION;
		fr.tenant = c->file.tenant;
		fr.ns = c->file.ns;
		fr.name = c->file.fn;
		if (rc == 0)
			rc = etcd_keys_row(e->cluster, &fr, &pk, NULL);
		if (rc == 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_CODE_DEL:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0 && c->empty_dir) {
			/* rmdir: nothing below it. */
			rc = rt_buf_puts(&key, "/");
			end = rc == 0 ? malloc(key.len + 2) : NULL;
			if (rc == 0 && end == NULL)
				rc = -ENOMEM;
			if (rc == 0) {
				etcd_prefix_end(key.data, end);
				rc = cmp_add(t, key.data, end, ETCD_VERSION,
					     ETCD_EQUAL, 0, 0);
			}
			if (rc == 0)
				key.data[--key.len] = '\0';
		}
		if (rc == 0)
			rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	case STORE_CODE_REV_PUT:
		rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data, val.len);
		break;
	case STORE_CODE_REV_DEL:
		rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	}
out:
	free(end);
	rt_buf_free(&key);
	rt_buf_free(&val);
	rt_buf_free(&pk);
	return rc;
}

int store_etcd_submit(struct store_etcd *e, const struct store_change *v,
		      size_t n, store_done_fn done, void *arg)
{
	return store_etcd_submit_code(e, v, n, NULL, 0, done, arg);
}

int store_etcd_submit_code(struct store_etcd *e, const struct store_change *v,
			   size_t n, const struct store_code_op *cv, size_t cn,
			   store_done_fn done, void *arg)
{
	struct txn t;
	size_t i;
	int rc = 0;

	if (e->stopped)
		return -ESHUTDOWN;
	memset(&t, 0, sizeof(t));
	t.w = calloc(1, sizeof(*t.w));
	if (t.w == NULL)
		return -ENOMEM;
	t.w->e = e;
	t.w->done = done;
	t.w->arg = arg;
	t.w->deadline = rt_mono_ms() + WAIT_MS;
	/* Code first: a revision of code is known before the function's
	 * new revision that runs it. */
	for (i = 0; i < cn && rc == 0; i++)
		rc = txn_code(e, &t, &cv[i]);
	for (i = 0; i < n && rc == 0; i++)
		rc = txn_change(e, &t, &v[i]);
	for (i = 0; i < n && rc == 0; i++)
		if (v[i].op == STORE_DELETE && v[i].row.kind == STORE_FUNCTION)
			rc = txn_code_of_fn(e, &t, &v[i].row);
	if (rc == 0)
		rc = etcd_txn(e->c, t.cmp, t.ncmp, t.ops, t.nops, t.fail,
			      t.nfail, on_txn, t.w);
	if (rc < 0)
		store_etcd__waiter_free(t.w);
	/* What it writes: the watch tells this controller's changes from
	 * the others' by them (whichever of the watch and the txn's answer
	 * comes first). */
	for (i = 0; rc == 0 && i < t.nops; i++)
		store_etcd__mine_set(
			e, t.ops[i].key,
			t.ops[i].kind == ETCD_OP_PUT ? t.ops[i].value : NULL,
			t.ops[i].value_len);
	for (i = 0; i < t.nstrs; i++)
		free(t.strs[i]);
	free(t.strs);
	free(t.cmp);
	free(t.ops);
	free(t.fail);
	return rc < 0 ? rc : STORE_LATER;
}

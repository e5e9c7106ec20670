/*
 * map.c - hash maps: string keys with chaining, 64-bit ids with open
 * addressing. Both grow by doubling; neither shrinks.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* ============================================================ string map */

struct rt_map_entry {
	struct rt_map_entry *next; /* chain */
	uint64_t hash;		   /* of key, kept to rehash cheaply */
	void *value;		   /* not owned */
	char key[];		   /* owned copy, NUL-terminated */
};

/* FNV-1a, 64 bit. */
static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

static int map_grow(struct rt_map *m)
{
	size_t n = m->nslots ? m->nslots * 2 : 16, i;
	struct rt_map_entry **slots = calloc(n, sizeof(*slots));

	/* Slots are a power of two: a hash is masked, not divided. */
	assert((n & (n - 1)) == 0 && n > m->nslots);
	if (slots == NULL)
		return -ENOMEM;
	for (i = 0; i < m->nslots; i++) {
		struct rt_map_entry *e = m->slots[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			assert((e->hash & (m->nslots - 1)) == i);
			e->next = slots[e->hash & (n - 1)];
			slots[e->hash & (n - 1)] = e;
		}
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = n;
	return 0;
}

void *rt_map_get(const struct rt_map *m, const char *key)
{
	uint64_t h;
	struct rt_map_entry *e;

	if (m->nslots == 0)
		return NULL;
	h = hash_str(key);
	for (e = m->slots[h & (m->nslots - 1)]; e != NULL; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e->value;
	return NULL;
}

int rt_map_put(struct rt_map *m, const char *key, void *value)
{
	size_t klen = strlen(key);
	struct rt_map_entry *e;
	uint64_t h;
	int rc;

	if (rt_map_get(m, key) != NULL)
		return -EEXIST;
	if (m->count >= m->nslots) {
		rc = map_grow(m);
		if (rc < 0)
			return rc;
	}
	assert(m->count < m->nslots); /* at most one entry a slot on average */
	e = malloc(sizeof(*e) + klen + 1);
	if (e == NULL)
		return -ENOMEM;
	h = hash_str(key);
	e->hash = h;
	e->value = value;
	memcpy(e->key, key, klen + 1);
	e->next = m->slots[h & (m->nslots - 1)];
	m->slots[h & (m->nslots - 1)] = e;
	m->count++;
	return 0;
}

int rt_map_update(struct rt_map *m, const char *key, void *value)
{
	struct rt_map_entry *e;
	uint64_t h;

	if (m->nslots == 0)
		return -ENOENT;
	h = hash_str(key);
	for (e = m->slots[h & (m->nslots - 1)]; e != NULL; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0) {
			e->value = value;
			return 0;
		}
	return -ENOENT;
}

int rt_map_ref(struct rt_map *m, const char *key)
{
	uintptr_t n = (uintptr_t)rt_map_get(m, key);

	if (n > 0)
		return rt_map_update(m, key, (void *)(n + 1));
	return rt_map_put(m, key, (void *)1);
}

uintptr_t rt_map_unref(struct rt_map *m, const char *key)
{
	uintptr_t n = (uintptr_t)rt_map_get(m, key);

	if (n > 1) {
		rt_map_update(m, key, (void *)(n - 1));
		return n - 1;
	}
	rt_map_del(m, key);
	return 0;
}

void *rt_map_del(struct rt_map *m, const char *key)
{
	struct rt_map_entry **pp, *e;
	uint64_t h;
	void *v;

	if (m->nslots == 0)
		return NULL;
	h = hash_str(key);
	for (pp = &m->slots[h & (m->nslots - 1)]; (e = *pp) != NULL;
	     pp = &e->next) {
		if (e->hash == h && strcmp(e->key, key) == 0) {
			*pp = e->next;
			v = e->value;
			free(e);
			assert(m->count > 0);
			m->count--;
			return v;
		}
	}
	return NULL;
}

int rt_map_each(const struct rt_map *m,
		int (*fn)(const char *key, void *value, void *arg), void *arg)
{
	size_t i;
	int rc;

	for (i = 0; i < m->nslots; i++) {
		struct rt_map_entry *e;

		for (e = m->slots[i]; e != NULL; e = e->next) {
			rc = fn(e->key, e->value, arg);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

static int values_cb(const char *key, void *value, void *arg)
{
	void ***p = arg;

	(void)key;
	*(*p)++ = value;
	return 0;
}

void **rt_map_values(const struct rt_map *m, size_t *n)
{
	void **v = calloc(m->count + 1, sizeof(void *)), **p = v;

	*n = 0;
	if (v == NULL)
		return NULL;
	rt_map_each(m, values_cb, &p);
	*n = (size_t)(p - v);
	assert(*n == m->count); /* count is the number of entries */
	return v;
}

void rt_map_free(struct rt_map *m)
{
	size_t i;

	for (i = 0; i < m->nslots; i++) {
		struct rt_map_entry *e = m->slots[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ================================================================ id map */

#define IDMAP_TOMB UINT64_MAX /* a removed slot; ids never take this value */

static uint64_t hash_id(uint64_t x)
{
	/* splitmix64's finaliser spreads sequential ids over the table. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static int idmap_resize(struct rt_idmap *m, size_t n)
{
	uint64_t *keys = calloc(n, sizeof(*keys));
	void **values = calloc(n, sizeof(*values));
	size_t i;

	/* A power of two, with room left: a probe always ends. */
	assert((n & (n - 1)) == 0 && n > m->count * 2);
	if (keys == NULL || values == NULL) {
		free(keys);
		free(values);
		return -ENOMEM;
	}
	for (i = 0; i < m->nslots; i++) {
		uint64_t k = m->keys[i];
		size_t j;

		if (k == 0 || k == IDMAP_TOMB)
			continue;
		for (j = hash_id(k) & (n - 1); keys[j] != 0;
		     j = (j + 1) & (n - 1))
			;
		keys[j] = k;
		values[j] = m->values[i];
		assert(values[j] != NULL);
	}
	free(m->keys);
	free(m->values);
	m->keys = keys;
	m->values = values;
	m->nslots = n;
	m->used = m->count;
	return 0;
}

void *rt_idmap_get(const struct rt_idmap *m, uint64_t id)
{
	size_t j;

	if (m->nslots == 0 || id == 0 || id == IDMAP_TOMB)
		return NULL;
	for (j = hash_id(id) & (m->nslots - 1); m->keys[j] != 0;
	     j = (j + 1) & (m->nslots - 1))
		if (m->keys[j] == id)
			return m->values[j];
	return NULL;
}

int rt_idmap_put(struct rt_idmap *m, uint64_t id, void *value)
{
	size_t j;
	int rc;

	if (id == 0 || id == IDMAP_TOMB || value == NULL)
		return -EINVAL;
	if (rt_idmap_get(m, id) != NULL)
		return -EEXIST;
	if ((m->used + 1) * 4 >= m->nslots * 3) {
		size_t n = m->nslots ? m->nslots : 16;

		while ((m->count + 1) * 2 >= n)
			n *= 2;
		rc = idmap_resize(m, n);
		if (rc < 0)
			return rc;
	}
	assert(m->used < m->nslots); /* a free slot ends the probe */
	for (j = hash_id(id) & (m->nslots - 1);
	     m->keys[j] != 0 && m->keys[j] != IDMAP_TOMB;
	     j = (j + 1) & (m->nslots - 1))
		;
	if (m->keys[j] == 0)
		m->used++;
	m->keys[j] = id;
	m->values[j] = value;
	m->count++;
	return 0;
}

void rt_idmap_del(struct rt_idmap *m, uint64_t id)
{
	size_t j;

	if (m->nslots == 0 || id == 0 || id == IDMAP_TOMB)
		return;
	for (j = hash_id(id) & (m->nslots - 1); m->keys[j] != 0;
	     j = (j + 1) & (m->nslots - 1)) {
		if (m->keys[j] == id) {
			m->keys[j] = IDMAP_TOMB;
			m->values[j] = NULL;
			assert(m->count > 0);
			m->count--;
			return;
		}
	}
}

void rt_idmap_free(struct rt_idmap *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof(*m));
}

void **rt_idmap_values(const struct rt_idmap *m, size_t *n)
{
	void **v = malloc((m->count + 1) * sizeof(void *));
	size_t j, k = 0;

	*n = 0;
	if (v == NULL)
		return NULL;
	for (j = 0; j < m->nslots; j++)
		if (m->keys[j] != 0 && m->keys[j] != IDMAP_TOMB)
			v[k++] = m->values[j];
	assert(k == m->count);
	*n = k;
	return v;
}

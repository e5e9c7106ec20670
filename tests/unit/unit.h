/*
 * unit.h - a small unit-test harness. Each TEST runs in its own process
 * with a time limit, so a crash or a hang fails that test alone.
 */
#ifndef FNFS_UNIT_H
#define FNFS_UNIT_H

#include <stdio.h>
#include <string.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

/* Adds a test to the list the runner walks. */
void unit_register(struct unit_test *t);

/* Records a failed check; the test fails when it ends. */
void unit_fail(const char *file, int line, const char *expr);

#define TEST(name)                                                             \
	static void test_##name(void);                                         \
	static struct unit_test unit_##name = { #name, test_##name, NULL };    \
	__attribute__((constructor)) static void reg_##name(void)              \
	{                                                                      \
		unit_register(&unit_##name);                                   \
	}                                                                      \
	static void test_##name(void)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			unit_fail(__FILE__, __LINE__, #cond);                  \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {         \
			fprintf(stderr, "  got \"%s\", want \"%s\"\n",         \
				a_ ? a_ : "(null)", b_ ? b_ : "(null)");       \
			unit_fail(__FILE__, __LINE__, #a " == " #b);           \
		}                                                              \
	} while (0)

#endif

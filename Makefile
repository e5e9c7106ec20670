# fnfs - build, test, run, install.
#
#   make                 build ./fnfs
#   make run             mount a demo at ./mnt in the foreground (Ctrl-C ends it)
#   make test            install missing deps, build, run unit + integration tests
#                        (side by side: JOBS=N tests at a time, default 2 per CPU)
#   make check-fast      unit tests + the smoke tests (under 2 minutes)
#   make SANITIZE=1 test the same with AddressSanitizer and UBSan (and the
#                        model's debug checks, FNFS_DEBUG; DEBUG=1 alone
#                        adds those to any build)
#   make lint            clang-format check, cppcheck, shellcheck
#   make before          build commit BEFORE (default 4d5d6d4, before issue
#                        24's restructuring) into build/before/fnfs, for
#                        the benches' --baseline (scripts/bench/compare)
#   make install         PREFIX=/usr/local DESTDIR=: fnfs, fnfs(1), fnfs.service

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/fnfs
# systemd reads /usr/local/lib/systemd/system and /usr/lib/systemd/system.
UNITDIR ?= $(PREFIX)/lib/systemd/system
CC ?= cc
PKGS := fuse3 libuv sqlite3 jansson libssl libcrypto libcurl

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN)
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif

ifeq ($(SANITIZE),1)
VARIANT := san
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -fno-sanitize-recover=undefined -DFNFS_DEBUG
LDFLAGS += -fsanitize=address,undefined
else
VARIANT := rel
endif
ifeq ($(DEBUG),1)
CFLAGS += -DFNFS_DEBUG
endif

# pkg-config is asked only when compiling, so `make help`-like targets and
# install-deps work on a machine that lacks the libraries.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# Debian's http-parser ships no pkg-config file.
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lhttp_parser -lm

B := build/$(VARIANT)

# Sources live in subfolders (docs/architecture.md); the sandbox's init
# (runtime/worker/init/) is built on its own, below.
INIT_DIR := runtime/worker/init
RUNTIME_SRC := $(shell find runtime -name '*.c' -not -path '$(INIT_DIR)/*' | LC_ALL=C sort)
SCHED_SRC := $(shell find sched -name '*.c' | LC_ALL=C sort)
FS_SRC := $(shell find fs -name '*.c' | LC_ALL=C sort)
UNIT_SRC := $(wildcard tests/unit/*.c)
HEADERS := $(shell find runtime sched fs tests/unit -name '*.h')
# What `make lint` formats: every C file of the tree.
C_FILES := $(shell find fs sched runtime tests/unit -name '*.[ch]' | LC_ALL=C sort)

LIB_OBJ := $(patsubst %.c,$(B)/%.o,$(RUNTIME_SRC) $(SCHED_SRC)) \
	   $(B)/$(INIT_DIR)/loop.o $(B)/runtime/worker/init-blob.o
FS_OBJ := $(patsubst %.c,$(B)/%.o,$(FS_SRC))
UNIT_OBJ := $(patsubst %.c,$(B)/%.o,$(UNIT_SRC))

.PHONY: all run test check-fast unit integration lint install uninstall clean deps before FORCE

all: fnfs

# ./fnfs is a copy of the last variant built, relinked when the variant
# changes (the stamp records which one it is).
fnfs: $(B)/fnfs build/.variant
	cp $(B)/fnfs $@.tmp && mv -f $@.tmp $@

build/.variant: FORCE
	@mkdir -p build
	@[ "$$(cat $@ 2>/dev/null)" = "$(VARIANT)" ] || echo $(VARIANT) > $@

$(B)/fnfs: $(FS_OBJ) $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(B)/unit-tests: $(UNIT_OBJ) $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The sandbox's init: a small static program whose bytes fnfs carries
# (runtime/worker/sandbox.c runs it from a memfd). Never sanitized: it runs as
# pid 1 of a namespace, before and beside the function.
# On x86-64 it has no C library at all ($(INIT_DIR)/bare.c).
$(B)/fnfs-init: $(INIT_DIR)/fnfs-init.c $(INIT_DIR)/loop.c $(INIT_DIR)/loop.h $(INIT_DIR)/bare.c
	@mkdir -p $(dir $@)
	if [ "$$($(CC) -dumpmachine | cut -d- -f1)" = x86_64 ]; then \
		$(CC) -std=gnu11 -D_GNU_SOURCE -Os -static -s -nostdlib \
			-ffreestanding -fno-stack-protector -fno-pie -no-pie \
			-fno-asynchronous-unwind-tables -Wl,--build-id=none \
			$(WARN) -o $@ $(INIT_DIR)/bare.c; \
	else \
		$(CC) -std=gnu11 -D_GNU_SOURCE -Os -static -s $(WARN) -o $@ \
			$(INIT_DIR)/fnfs-init.c $(INIT_DIR)/loop.c; \
	fi

$(B)/runtime/worker/init-blob.o: $(B)/fnfs-init
	@mkdir -p $(dir $@)
	cd $(B) && ld -r -b binary -z noexecstack -o runtime/worker/init-blob.o fnfs-init

$(B)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

deps:
	./scripts/install-deps

run: deps
	$(MAKE) --no-print-directory fnfs
	./scripts/demo

# tests/run -j: independent tests side by side (see tests/run), after
# scripts/check-house (the house's rules: sizes, asserts, backends,
# faces, cluster checks, cycles; on the plain build, whose objects it
# reads). A sanitized build runs several times slower: its tests get
# 900 s each.
JOBS ?=
# The build itself side by side too (make test on a fresh clone builds
# everything): one job per CPU; BUILD_J= (empty) for one at a time.
BUILD_J ?= -j$(shell nproc 2>/dev/null || echo 2)
TEST_ENV = $(if $(SANITIZE),FNFS_TEST_TIMEOUT=$${FNFS_TEST_TIMEOUT:-900})
test: deps
	$(MAKE) --no-print-directory $(BUILD_J) fnfs $(B)/unit-tests
	$(if $(SANITIZE),,./scripts/check-house)
	$(TEST_ENV) ./tests/run $(if $(JOBS),-j $(JOBS)) $(B)/unit-tests

# The edit-compile-test loop: the unit tests and the tests marked
# "# tests/run: smoke", side by side.
check-fast:
	$(MAKE) --no-print-directory $(BUILD_J) fnfs $(B)/unit-tests
	$(TEST_ENV) ./tests/run --smoke $(if $(JOBS),-j $(JOBS)) $(B)/unit-tests

unit: $(B)/unit-tests
	$(B)/unit-tests

integration: fnfs
	$(TEST_ENV) ./tests/run $(if $(JOBS),-j $(JOBS)) --integration-only

lint:
	clang-format --dry-run --Werror $(C_FILES) $(wildcard scripts/bench/*.c)
	cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
		--enable=warning,portability,performance \
		--suppress=missingIncludeSystem \
		fs sched runtime tests/unit
	shellcheck -x scripts/install-deps scripts/demo scripts/demo-banner scripts/check-house scripts/sched-cycles tests/run \
		tests/integration/*.sh .ci/run $(wildcard scripts/bench/fs-latency scripts/bench/calls scripts/bench/sandbox scripts/bench/status-callers scripts/bench/remote scripts/bench/lambda scripts/bench/http scripts/bench/concurrency scripts/bench/etcd-put scripts/bench/etcd-write scripts/bench/forward scripts/bench/scale-etcd scripts/bench/failover-etcd scripts/bench/restart scripts/bench/scale scripts/bench/failover scripts/bench/compare)
	@# The man page: groff says nothing when it is well formed.
	@out=$$(groff -man -ww -z -Tutf8 docs/fnfs.1 2>&1); \
		if [ -n "$$out" ]; then echo "$$out"; exit 1; fi

# The binary before issue 24's restructuring, built from a `git archive`
# of that commit in build/before/src (the working tree is not touched);
# build/before/commit records which commit build/before/fnfs is.
BEFORE ?= 4d5d6d4
before:
	@mkdir -p build/before
	@set -e; c=$$(git rev-parse --verify '$(BEFORE)^{commit}'); \
	if [ -x build/before/fnfs ] && [ "$$(cat build/before/commit 2>/dev/null)" = "$$c" ]; then \
		echo "build/before/fnfs is $$c"; exit 0; fi; \
	rm -rf build/before/src build/before/fnfs build/before/commit; \
	mkdir -p build/before/src; \
	git archive "$$c" | tar -x -C build/before/src; \
	$(MAKE) --no-print-directory -C build/before/src fnfs; \
	cp build/before/src/fnfs build/before/fnfs; \
	echo "$$c" > build/before/commit; \
	echo "built build/before/fnfs from $$c"

# The unit's ExecStart names the installed binary.
install: fnfs
	install -D -m 0755 fnfs $(DESTDIR)$(BINDIR)/fnfs
	install -D -m 0644 docs/fnfs.1 $(DESTDIR)$(MANDIR)/man1/fnfs.1
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local/bin/fnfs|$(BINDIR)/fnfs|' scripts/fnfs.service \
		>$(DESTDIR)$(UNITDIR)/fnfs.service.tmp
	chmod 0644 $(DESTDIR)$(UNITDIR)/fnfs.service.tmp
	mv -f $(DESTDIR)$(UNITDIR)/fnfs.service.tmp $(DESTDIR)$(UNITDIR)/fnfs.service
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	for f in docs/*.md; do \
		install -D -m 0644 $$f $(DESTDIR)$(DOCDIR)/$$(basename $$f); \
	done
	@echo "installed $(DESTDIR)$(BINDIR)/fnfs, the man page fnfs(1) and" \
		"$(DESTDIR)$(UNITDIR)/fnfs.service (systemctl daemon-reload to use it)"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/fnfs $(DESTDIR)$(MANDIR)/man1/fnfs.1 \
		$(DESTDIR)$(UNITDIR)/fnfs.service
	rm -rf $(DESTDIR)$(DOCDIR)

clean:
	rm -rf build fnfs

# bftblk: a Byzantine-fault-tolerant, erasure-coded network block device.
#
#   make                 build everything into build/, with the test
#                        server build/tests/bftblk-server-test (the
#                        test-only options of server/testing/, which
#                        bftblk-server never contains)
#   make check           unit + integration tests (what CI runs)
#   make check-unit      cmocka unit tests only
#   make check-asan      unit + integration tests built with ASan+UBSan
#   make check-valgrind  servers and plugin under valgrind: a workload and
#                        the security tests
#   make check-faults    Byzantine servers and clients, crashes, lincheck
#   make check-system    filesystems, kernel /dev/nbd0, VM disks and a
#                        deployment on network namespaces (root)
#   make deb             Debian packages into build-deb/ (lintian-clean)
#   make install         programs, library, plugin, manual pages and
#                        systemd units under PREFIX (default /usr/local),
#                        staged under DESTDIR; make uninstall removes them
#   make run / make stop bring up a 4-server demo cluster and nbdkit
#   make bench           fio jobs against bftblk and nbdkit's memory plugin
#   make bench-rebuild   rebuild speed, its cost to fio, catch-up sizes
#   make bench-recover   a proactive recovery's scrub and whole time
#   make bench-store     the store at disk scale: RAM per block, restart
#                        with a cold cache, space, overwrite speed
#   make bench-trim      the space trim and write-zeroes give back
#   make bench-snap      snapshots: create time, writes after one, export,
#                        the space a delete gives back
#   make bench-snap-diff export-diff after 1% rewritten: what it reads,
#                        the stream's size, import-diff onto a copy
#   make fuzz            libFuzzer harnesses (clang), FUZZ_TIME s each
#   make fuzz-long       each harness for FUZZ_TIME s or FUZZ_RUNS inputs,
#                        whichever ends first, or FUZZ_TOTAL inputs across
#                        them all at equal time each (FUZZ_WALL=S: at
#                        most about S s), then what it found merged into
#                        tests/fuzz/corpus/ (libFuzzer -merge=1) to
#                        commit; a release runs FUZZ_TOTAL=100000000
#   make BENCH_NOVERIFY=1  benchmark-only build into build-noverify/ with
#                        fragment hashing and MACs off (no BFT; refuses
#                        to run without BFTBLK_BENCH_NOVERIFY=1)
#   make bench-overhead  bftblk with and without hashing/MACs, alternated
#   make bench-latency   64 KiB read/write latency with server 0 slowed by
#                        0, 2, 5 and 20 ms (a delay proxy on its link)

SAN ?=
# Benchmark-only: common/crypto.c then computes no hash or MAC (see
# there).  Its own build directory keeps it from ever mixing with a
# normal build's objects.
BENCH_NOVERIFY ?=
ifeq ($(BENCH_NOVERIFY),1)
BUILD ?= build-noverify
NOVERIFY_FLAGS = -DBFTBLK_BENCH_NOVERIFY
endif
ifeq ($(SAN),1)
BUILD ?= build-asan
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined
OPT = -O1 -g
else
BUILD ?= build
SANFLAGS =
OPT = -O2 -g
endif

CC ?= cc
PKGS = libsodium libuv msgpack libcrypto
# H is BLAKE3 (common/crypto.h says why), built from the reference C
# implementation that Debian ships in librust-blake3-dev: Debian 12 has no
# C library package for it.  Its own flags, since it is not our code;
# the x86-64 assembly is picked at run time by the CPU's features.
BLAKE3_DIR ?= $(lastword $(sort $(wildcard /usr/share/cargo/registry/blake3-*/c)))
ifeq ($(BLAKE3_DIR)$(filter clean,$(MAKECMDGOALS)),)
$(error BLAKE3 sources not found: install librust-blake3-dev (scripts/install-deps))
endif
BLAKE3_SRC = blake3.c blake3_dispatch.c blake3_portable.c
ifeq ($(shell uname -m),x86_64)
BLAKE3_SRC += blake3_sse2_x86-64_unix.S blake3_sse41_x86-64_unix.S \
	blake3_avx2_x86-64_unix.S blake3_avx512_x86-64_unix.S
BLAKE3_DEFS =
else
BLAKE3_DEFS = -DBLAKE3_NO_SSE2 -DBLAKE3_NO_SSE41 -DBLAKE3_NO_AVX2 \
	-DBLAKE3_NO_AVX512 -DBLAKE3_USE_NEON=0
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) nbdkit)
PKG_LIBS := $(shell pkg-config --libs $(PKGS)) -lerasurecode -lpthread
CFLAGS ?= $(OPT)
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	-fPIC -Icommon -isystem $(BLAKE3_DIR) $(PKG_CFLAGS) $(SANFLAGS) \
	$(NOVERIFY_FLAGS)
override LDFLAGS += $(SANFLAGS)

COMMON_SRC = $(wildcard common/*.c)
# The store (server/store/) and the rebuild (server/rebuild/) are the
# server's two subsystems with an API of their own.
STORE_SRC  = $(wildcard server/store/*.c)
SERVER_SRC = $(wildcard server/*.c server/rebuild/*.c) $(STORE_SRC)
LIB_SRC    = $(wildcard lib/*.c)
PLUGIN_SRC = $(wildcard nbd-plugin/*.c)
ADMIN_SRC  = $(wildcard admin/*.c)
UNIT_SRC   = $(wildcard tests/unit/test_*.c)
TOOL_SRC   = $(wildcard tests/tools/*.c)
TESTCLIENT_SRC = $(wildcard tests/tools/testclient/*.c)
FUZZ_NAMES = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

LIBCOMMON = $(BUILD)/libbftcommon.a
# The store as a library of its own: it needs only common/, and its
# tests link it alone.
LIBSTORE = $(BUILD)/libbftstore.a
# libbftblk: the client engine (lib/bftblk.h), static with the common
# code inside for the plugin, the admin tool and the tests; shared with
# only the bftblk_ functions exported.
LIBBFTBLK = $(BUILD)/libbftblk.a
LIBBFTBLK_SO = $(BUILD)/libbftblk.so.1
LIBBFTBLK_LINK = $(BUILD)/libbftblk.so
SERVER    = $(BUILD)/bftblk-server
# The server with the test-only options of server/testing/ (--byzantine,
# --record-frames), for tests/faults/ and tests/fuzz/make-seeds.sh.  Its
# objects are compiled with BFTBLK_TEST_SERVER into $(BUILD)/testserver/,
# never mixed with the production server's: without that define,
# server/test_hooks.h compiles to nothing and bftblk-server has none of it.
TESTSERVER = $(BUILD)/tests/bftblk-server-test
TESTSERVER_SRC = $(SERVER_SRC) $(wildcard server/testing/*.c)
TESTSERVER_OBJ = $(patsubst %.c,$(BUILD)/testserver/%.o,$(TESTSERVER_SRC))
PLUGIN    = $(BUILD)/nbdkit-bftblk-plugin.so
ADMIN     = $(BUILD)/bftblk
UNIT_BINS = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOL_BINS = $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRC))
TESTCLIENT = $(BUILD)/tests/bftblk-testclient
# Each fuzz harness also builds with $(CC) as a unit test that runs its
# regressions and seeds once (tests/fuzz/standalone.c): test_fuzz_frame...
FUZZ_UNIT_BINS = $(patsubst %,$(BUILD)/tests/test_%,$(FUZZ_NAMES))
# Unit tests of server internals link the server's objects except main.
# The rebuild (server/rebuild/) reads from peers through libbftblk;
# the handler's tests and fuzzers need neither.
SERVER_CORE_SRC = $(filter-out server/main.c server/rebuild/%,$(SERVER_SRC))
SERVER_LIB_OBJ = $(call obj,$(SERVER_CORE_SRC))
# bft_store_discard(), a close without sync or checkpoint, and
# bft_store_reset(), an open store emptied in place, for tests that
# start every case from an empty store; no server links them.
STORE_TESTING_SRC = server/testing/store_discard.c \
	server/testing/store_reset.c

EXAMPLE   = $(BUILD)/tests/bftblk-example

all: $(SERVER) $(LIBBFTBLK) $(LIBBFTBLK_LINK) $(PLUGIN) $(ADMIN) $(EXAMPLE) \
	$(UNIT_BINS) $(TOOL_BINS) $(TESTCLIENT) \
	$(FUZZ_UNIT_BINS) $(TESTSERVER)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/blake3/%.o: $(BLAKE3_DIR)/%
	@mkdir -p $(dir $@)
	$(CC) -O3 -fPIC $(BLAKE3_DEFS) $(SANFLAGS) -c $< -o $@

$(LIBSTORE): $(call obj,$(STORE_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBCOMMON): $(call obj,$(COMMON_SRC)) \
		$(patsubst %,$(BUILD)/blake3/%.o,$(BLAKE3_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# A server rebuilding reads from its peers through libbftblk, which
# holds the common code too.
$(BUILD)/server/%.o: override CFLAGS += -Ilib
$(SERVER): $(call obj,$(SERVER_SRC)) $(LIBBFTBLK)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/testserver/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DBFTBLK_TEST_SERVER -Iserver -Ilib -MMD -MP -c $< -o $@

$(TESTSERVER): $(TESTSERVER_OBJ) $(LIBBFTBLK)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

LIBBFTBLK_OBJ = $(call obj,$(LIB_SRC) $(COMMON_SRC)) \
	$(patsubst %,$(BUILD)/blake3/%.o,$(BLAKE3_SRC))

$(LIBBFTBLK): $(LIBBFTBLK_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBBFTBLK_SO): $(LIBBFTBLK_OBJ) lib/libbftblk.syms
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libbftblk.so.1 \
		-Wl,--version-script=lib/libbftblk.syms -Wl,--no-undefined \
		-o $@ $(LIBBFTBLK_OBJ) $(PKG_LIBS)

$(LIBBFTBLK_LINK): $(LIBBFTBLK_SO)
	ln -sf $(notdir $<) $@

# Front ends see lib/bftblk.h only.
$(BUILD)/nbd-plugin/%.o $(BUILD)/admin/%.o: override CFLAGS += -Ilib

$(PLUGIN): $(call obj,$(PLUGIN_SRC)) $(LIBBFTBLK) nbd-plugin/plugin.syms
	$(CC) $(LDFLAGS) -shared -Wl,--version-script=nbd-plugin/plugin.syms \
		-o $@ $(call obj,$(PLUGIN_SRC)) $(LIBBFTBLK) $(PKG_LIBS)

$(ADMIN): $(call obj,$(ADMIN_SRC)) $(LIBBFTBLK)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The documentation's example, as a user builds it: the public header
# and the shared library only (tests/integration/library.sh runs it).
$(EXAMPLE): docs/example.c lib/bftblk.h $(LIBBFTBLK_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ilib $(LDFLAGS) -o $@ docs/example.c \
		-L$(BUILD) -lbftblk -Wl,-rpath,$(abspath $(BUILD))

$(BUILD)/tests/test_store $(BUILD)/tests/test_store_compact \
	$(BUILD)/tests/test_store_crash $(BUILD)/tests/test_store_identity \
	$(BUILD)/tests/test_store_drop $(BUILD)/tests/test_store_flush \
	$(BUILD)/tests/test_store_snap $(BUILD)/tests/test_store_snap_replay \
	$(BUILD)/tests/test_store_pagecache $(BUILD)/tests/test_store_reuse: \
	$(LIBSTORE)
# The reset's objects before the library whose insides they use.
$(BUILD)/tests/test_store_reset: $(call obj,$(STORE_TESTING_SRC)) $(LIBSTORE)
$(BUILD)/tests/test_handler_info \
	$(BUILD)/tests/test_handler $(BUILD)/tests/test_handler_vol \
	$(BUILD)/tests/test_handler_fence $(BUILD)/tests/test_handler_view \
	$(BUILD)/tests/test_handler_reauth $(BUILD)/tests/test_keys_census \
	$(BUILD)/tests/test_quota: $(SERVER_LIB_OBJ)
# The library's handle, options and identities, without servers.
$(BUILD)/tests/test_peer_key $(BUILD)/tests/test_voltab \
	$(BUILD)/tests/test_options: $(call obj,$(LIB_SRC))
$(BUILD)/tests/unit/test_peer_key.o $(BUILD)/tests/unit/test_voltab.o \
	$(BUILD)/tests/unit/test_options.o: override CFLAGS += -Ilib
# The rebuild's judging of claims, driven by hand (no peers, no thread).
$(BUILD)/tests/test_rebuild_claims: $(BUILD)/server/rebuild/rebuild_claims.o
$(BUILD)/tests/unit/test_rebuild_claims.o: override CFLAGS += -Ilib
# Proactive recovery's decision, with peers simulated by hand.
$(BUILD)/tests/test_rejuv: $(BUILD)/server/rejuv_decide.o
# bftblk status's judging and printing, without sockets.
$(BUILD)/tests/unit/test_status_format.o: override CFLAGS += -Ilib
$(BUILD)/tests/test_status_format: $(BUILD)/admin/status_format.o \
    $(BUILD)/admin/status_clients.o $(BUILD)/admin/status_volumes.o \
    $(BUILD)/admin/status_release.o $(BUILD)/admin/status_recover.o \
    $(BUILD)/admin/status_keys.o
# Pieces of the engine that stand alone.
$(BUILD)/tests/test_blockcache: $(BUILD)/lib/blockcache.o
$(BUILD)/tests/test_lease_watch: $(BUILD)/lib/lease_watch.o
$(BUILD)/tests/test_coalesce: $(BUILD)/lib/coalesce.o $(BUILD)/lib/error.o
$(BUILD)/tests/test_error: $(BUILD)/lib/error.o
$(BUILD)/tests/test_op_pool: $(BUILD)/lib/op_pool.o
$(BUILD)/tests/test_batch: $(BUILD)/lib/op_batch.o
$(BUILD)/tests/test_conn_tx: $(BUILD)/lib/conn_tx.o
# The engine's rounds, driven by hand: every engine object but the real
# connections, a fake connection layer in their place, and the server's
# handler and store as the honest servers the rounds talk to.
ROUNDS_TEST_OBJ = $(filter-out $(BUILD)/lib/conn.o,$(call obj,$(LIB_SRC))) \
	$(BUILD)/tests/unit/fake_conn.o $(SERVER_LIB_OBJ)
$(BUILD)/tests/test_rounds_write $(BUILD)/tests/test_rounds_read \
	$(BUILD)/tests/test_rounds_keys $(BUILD)/tests/test_rounds_part: \
	$(ROUNDS_TEST_OBJ)
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(LIBCOMMON) \
		$(PKG_LIBS) $(shell pkg-config --libs cmocka)

# Benchmark tools; bench-hash also measures OpenSSL's SHA-256 against ours.
$(BUILD)/tests/%: $(BUILD)/tests/tools/%.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(shell pkg-config --libs libcrypto)

# The misbehaving client of tests/faults/ and the channel tests, in
# parts; it speaks through the blocking sessions of common/session.h.
$(BUILD)/tests/tools/testclient/%.o: override CFLAGS += -Ilib
$(TESTCLIENT): $(call obj,$(TESTCLIENT_SRC)) $(LIBBFTBLK)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# util.o comes first: its log sink keeps log.o out of the archive.
$(FUZZ_UNIT_BINS): $(BUILD)/tests/test_%: $(BUILD)/tests/fuzz/%.o \
		$(BUILD)/tests/fuzz/util.o $(BUILD)/tests/fuzz/standalone.o \
		$(SERVER_LIB_OBJ) $(call obj,$(STORE_TESTING_SRC)) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out $(LIBCOMMON) \
		$(BUILD)/tests/fuzz/standalone.o,$(filter %.o,$^)) \
		$(BUILD)/tests/fuzz/standalone.o $(LIBCOMMON) $(PKG_LIBS)

$(BUILD)/tests/fuzz/%.o: override CFLAGS += -Itests/fuzz
# Where the standalone runs find the regressions and seeds.
$(BUILD)/tests/fuzz/standalone.o: override CFLAGS += -DFUZZ_SRCDIR='"$(CURDIR)"'

check-unit: all
	BUILD=$(BUILD) tests/run-unit

# The plugin's sender threads (senders=on) are the default only with
# more than two CPUs; the suites run with them, the ASan run without,
# so that both ways of sending go through every test.
TEST_SENDERS ?= on

check-integration: all
	BFTBLK_TEST_SENDERS=$(TEST_SENDERS) BUILD=$(BUILD) tests/run-integration

check: check-unit check-integration

check-asan:
	$(MAKE) SAN=1 TEST_SENDERS=off check

# Byzantine servers, misbehaving clients and crashes, each scenario a
# script in tests/faults/, with histories checked for linearizability.
check-faults: all
	BFTBLK_TEST_SENDERS=$(TEST_SENDERS) BUILD=$(BUILD) tests/run-integration \
	    $(filter-out tests/faults/lib.sh,$(wildcard tests/faults/*.sh))

# Real use: host filesystem over nbdfuse, a kernel /dev/nbd0 and a VM
# disk in TCG guests, fio as documented, and README's deployment on five
# hosts made of network namespaces.  Guests boot in minutes here.
# The packages are built once here for the two tests that install them
# (BFTBLK_DEBS); if that fails, each builds its own and says why.
check-system: all
	@debs=$(CURDIR)/$(BUILD)/debs; rm -rf "$$debs"; \
	if $(MAKE) --no-print-directory DEB_DIR="$$debs" deb \
	    >$(BUILD)/make-deb.log 2>&1; then \
		export BFTBLK_DEBS="$$debs"; \
	else \
		echo "check-system: make deb failed ($(BUILD)/make-deb.log)"; \
	fi; \
	BUILD=$(BUILD) BFTBLK_TEST_TIMEOUT=900 tests/run-integration \
	    $(wildcard tests/system/*.sh)

# valgrind.sh checks itself; the security tests run again with servers
# and nbdkit under valgrind (VALGRIND=1 in lib.sh), which fails them on
# any memory error or leak.  The slower tests stay out of it.
VALGRIND_TESTS = basic-rw roles channel-tamper encrypt rotation coalesce
check-valgrind: all
	BUILD=$(BUILD) tests/run-integration tests/integration/valgrind.sh
	VALGRIND=1 BUILD=$(BUILD) tests/run-integration \
	    $(patsubst %,tests/integration/%.sh,$(VALGRIND_TESTS))

# Installation.  The server is a daemon (sbin, man section 8); bftblk
# is a tool anyone holding a key runs (bin).  The plugin goes where
# nbdkit looks for plugins by short name, its compiled-in plugindir,
# whatever PREFIX is: that is what makes `nbdkit bftblk ...` work.
# NBDKIT_PLUGINDIR overrides it (nbdkit then needs the plugin's path).
# The units name /etc/bftblk and /var/lib/bftblk (systemd/*.in says
# what goes there) and run as the user bftblk from sysusers.d.
# The project's version is lib/bftblk.h's (the one place it is kept).
VERSION := $(shell awk '/^\#define BFTBLK_VERSION_(MAJOR|MINOR|PATCH)[ \t]/ \
	{ v = v sep $$3; sep = "." } END { print v }' lib/bftblk.h)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
NBDKIT_PLUGINDIR ?= $(or $(shell pkg-config --variable=plugindir nbdkit \
	2>/dev/null),$(LIBDIR)/$(MULTIARCH)/nbdkit/plugins)
NBDKIT ?= $(or $(shell command -v nbdkit 2>/dev/null),/usr/bin/nbdkit)
# systemd's own directories when installing into /usr, else PREFIX's
# (systemd also reads /usr/local/lib/systemd/system and sysusers.d).
ifeq ($(PREFIX),/usr)
SYSTEMDUNITDIR ?= $(or $(shell pkg-config --variable=systemdsystemunitdir \
	systemd 2>/dev/null),/usr/lib/systemd/system)
SYSUSERSDIR ?= $(or $(shell pkg-config --variable=sysusersdir systemd \
	2>/dev/null),/usr/lib/sysusers.d)
else
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
endif
INSTALL ?= install

UNITS = $(BUILD)/systemd/bftblk-server@.service \
	$(BUILD)/systemd/bftblk-nbd.service systemd/bftblk-nbd.socket

$(BUILD)/systemd/%: systemd/%.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	    -e 's|@NBDKIT@|$(NBDKIT)|g' \
	    -e 's|@PLUGIN@|$(NBDKIT_PLUGINDIR)/nbdkit-bftblk-plugin.so|g' \
	    $< >$@

$(BUILD)/bftblk.pc: Makefile
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' \
	    'includedir=$(INCLUDEDIR)' '' 'Name: bftblk' \
	    'Description: Byzantine-fault-tolerant erasure-coded block storage client' \
	    'Version: $(VERSION)' 'Libs: -L$${libdir} -lbftblk' \
	    'Cflags: -I$${includedir}' >$@

# The units and pkg-config file hold paths: made anew on every install.
install: $(SERVER) $(ADMIN) $(LIBBFTBLK_SO) $(PLUGIN)
	rm -f $(BUILD)/bftblk.pc $(filter $(BUILD)/%,$(UNITS))
	$(MAKE) --no-print-directory $(BUILD)/bftblk.pc \
	    $(filter $(BUILD)/%,$(UNITS))
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	    $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(NBDKIT_PLUGINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR) \
	    $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)/etc/bftblk \
	    $(DESTDIR)/var/lib/bftblk
	$(INSTALL) -m 755 $(ADMIN) $(DESTDIR)$(BINDIR)/bftblk
	$(INSTALL) -m 755 $(SERVER) $(DESTDIR)$(SBINDIR)/bftblk-server
	$(INSTALL) -m 755 $(LIBBFTBLK_SO) $(DESTDIR)$(LIBDIR)/libbftblk.so.1
	ln -sf libbftblk.so.1 $(DESTDIR)$(LIBDIR)/libbftblk.so
	$(INSTALL) -m 644 lib/bftblk.h $(DESTDIR)$(INCLUDEDIR)/bftblk.h
	$(INSTALL) -m 644 $(BUILD)/bftblk.pc $(DESTDIR)$(PKGCONFIGDIR)/bftblk.pc
	$(INSTALL) -m 755 $(PLUGIN) \
	    $(DESTDIR)$(NBDKIT_PLUGINDIR)/nbdkit-bftblk-plugin.so
	$(INSTALL) -m 644 man/nbdkit-bftblk-plugin.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 man/bftblk.conf.5 $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 644 man/bftblk.8 man/bftblk-server.8 \
	    $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 644 $(UNITS) $(DESTDIR)$(SYSTEMDUNITDIR)/
	$(INSTALL) -m 644 systemd/bftblk.sysusers \
	    $(DESTDIR)$(SYSUSERSDIR)/bftblk.conf
	@case '$(NBDKIT_PLUGINDIR)' in '$(PREFIX)'/*) ;; *) \
	    echo "install: the plugin went to nbdkit's plugin directory" \
		"$(NBDKIT_PLUGINDIR), outside PREFIX $(PREFIX), so that" \
		"'nbdkit bftblk' finds it (NBDKIT_PLUGINDIR=... to change)" ;; \
	esac
	@if [ -z '$(DESTDIR)' ]; then \
	    ldconfig 2>/dev/null || true; \
	    if command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/bftblk.conf; fi; \
	    if [ -d /run/systemd/system ]; then \
		systemctl daemon-reload || true; fi; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/bftblk $(DESTDIR)$(SBINDIR)/bftblk-server \
	    $(DESTDIR)$(LIBDIR)/libbftblk.so.1 $(DESTDIR)$(LIBDIR)/libbftblk.so \
	    $(DESTDIR)$(INCLUDEDIR)/bftblk.h \
	    $(DESTDIR)$(PKGCONFIGDIR)/bftblk.pc \
	    $(DESTDIR)$(NBDKIT_PLUGINDIR)/nbdkit-bftblk-plugin.so \
	    $(DESTDIR)$(MANDIR)/man1/nbdkit-bftblk-plugin.1 \
	    $(DESTDIR)$(MANDIR)/man5/bftblk.conf.5 \
	    $(DESTDIR)$(MANDIR)/man8/bftblk.8 \
	    $(DESTDIR)$(MANDIR)/man8/bftblk-server.8 \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/bftblk-server@.service \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/bftblk-nbd.service \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/bftblk-nbd.socket \
	    $(DESTDIR)$(SYSUSERSDIR)/bftblk.conf
	@# Keys and data stay; their directories go only when empty.
	-rmdir $(DESTDIR)/etc/bftblk $(DESTDIR)/var/lib/bftblk 2>/dev/null
	@if [ -z '$(DESTDIR)' ]; then ldconfig 2>/dev/null || true; fi

# Debian packages (debian/) for this machine's release, built by
# scripts/build-deb in a copy of the tree under DEB_DIR, where the
# .deb files end; lintian must find no error or warning.
DEB_DIR ?= build-deb
deb:
	scripts/build-deb $(DEB_DIR) $(VERSION)

# The demo script installs what is missing and builds by itself.
run:
	scripts/bftblk-demo start

stop:
	scripts/bftblk-demo stop

bench: all
	BUILD=$(BUILD) fio-jobs/bench

# How servers heal themselves: rebuild speed, its cost to foreground
# I/O and what a catch-up moves (BENCH_DISK=1G for a shorter run).
bench-rebuild: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-rebuild

# What a proactive recovery costs (BENCH_DISK, default 4G).
bench-recover: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-recover

# The store at disk scale: RAM per written block, cold restarts, space
# and compaction under overwrites (BENCH_DISK=2G for a quicker run).
bench-store: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-store

# The space trim and write-zeroes give back to the servers (BENCH_DISK,
# default 4G).
bench-trim: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-trim

# What snapshots cost: create, writes after one, export, delete
# (BENCH_SNAP_SIZE, default 4G; 512M for a quick run).
bench-snap: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-snap

# An incremental backup: export-diff after 1% of a volume was rewritten.
bench-snap-diff: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-snap-diff

# What rotating the MAC keys costs: the re-authentication pass, idle
# and beside fio (BENCH_DISK, default 4G).
bench-keys: all
	BUILD=$(BUILD) NO_MAKE=1 fio-jobs/bench-keys

# The BFT overhead: the same code with hashing and MACs compiled out,
# alternated with the normal build (fio-jobs/bench-overhead).
bench-overhead:
	fio-jobs/bench-overhead

# Latency with one slow server: a delay proxy (tests/tools/delay-proxy.py)
# in front of server 0, 64 KiB reads and writes at iodepth=1 per delay.
bench-latency:
	BUILD=$(BUILD) fio-jobs/bench-latency

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), built with clang into their
# own directory: every object gets coverage instrumentation and ASan +
# UBSan; common/log.c is left out for the harnesses' quiet log sink.
FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
# -Ilib: the server's objects, as in every build (its version is
# bftblk.h's).
FUZZ_CFLAGS = -O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	-Icommon -Ilib -Itests/fuzz -isystem $(BLAKE3_DIR) \
	$(shell pkg-config --cflags $(PKGS)) $(FUZZ_SAN)
FUZZ_LIB_OBJ = $(patsubst %.c,$(FUZZ_BUILD)/%.o,tests/fuzz/util.c \
	$(filter-out common/log.c,$(COMMON_SRC)) \
	$(SERVER_CORE_SRC) $(STORE_TESTING_SRC)) \
	$(patsubst %,$(FUZZ_BUILD)/blake3/%.o,$(BLAKE3_SRC))
FUZZ_BINS = $(addprefix $(FUZZ_BUILD)/,$(FUZZ_NAMES))

$(FUZZ_BUILD)/blake3/%.o: $(BLAKE3_DIR)/%
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O2 -fPIC $(BLAKE3_DEFS) $(FUZZ_SAN) -c $< -o $@

# Coverage: libFuzzer's edge counters everywhere, and a callback for
# every comparison (its hints for the mutator) everywhere but in the
# store, whose index walks (1,024 blocks a page in SUMMARY, LCLIST,
# DROP and the replay check) and CRC loop made a third of fuzz_handler's
# time those callbacks (perf, 2026-11-26).  The store's branches still
# count as coverage; the handler and the decoder above it keep theirs.
FUZZ_COV = -fsanitize=fuzzer-no-link
$(patsubst %.c,$(FUZZ_BUILD)/%.o,$(STORE_SRC) $(STORE_TESTING_SRC)): \
	FUZZ_COV += -fno-sanitize-coverage=trace-cmp

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_COV) -MMD -MP -c $< -o $@

$(FUZZ_BINS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/tests/fuzz/%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(PKG_LIBS)

fuzz-build: $(FUZZ_BINS)

# Regressions first, then FUZZ_TIME seconds per harness on a copy of the
# seeds in $(FUZZ_BUILD)/corpus; one summary line per harness.
fuzz: fuzz-build
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run-fuzz \
		$(FUZZ_NAMES)

# The same for as long as asked, keeping what was found: FUZZ_TIME
# seconds (only if given) or FUZZ_RUNS inputs per harness, or FUZZ_TOTAL
# inputs across the harnesses, each given the same time (in rounds, the
# first FUZZ_CAL seconds each to measure rates; FUZZ_WALL=S bounds the
# whole run to about S seconds); then the inputs that add coverage are
# merged into tests/fuzz/corpus/HARNESS for a commit.  Without any of
# them it would never end, so it refuses.  A release:
#   make fuzz-long FUZZ_TOTAL=100000000
FUZZ_RUNS ?=
FUZZ_TOTAL ?=
FUZZ_WALL ?= 0
FUZZ_CAL ?= 30
FUZZ_LONG_TIME = $(if $(filter command line environment,$(origin \
	FUZZ_TIME)),$(FUZZ_TIME),0)
fuzz-long: fuzz-build
	@if [ -z '$(FUZZ_RUNS)$(FUZZ_TOTAL)' ] && \
	    [ '$(FUZZ_LONG_TIME)' = 0 ]; then \
	    echo 'fuzz-long: give FUZZ_TOTAL=N (inputs across the' \
		'harnesses), FUZZ_RUNS=N (inputs per harness) or' \
		'FUZZ_TIME=S (seconds per harness)'; exit 2; fi
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TIME=$(FUZZ_LONG_TIME) \
		FUZZ_RUNS=$(or $(FUZZ_RUNS),-1) FUZZ_MERGE=1 \
		FUZZ_TOTAL=$(or $(FUZZ_TOTAL),0) FUZZ_WALL=$(FUZZ_WALL) \
		FUZZ_CAL=$(FUZZ_CAL) tests/fuzz/run-fuzz $(FUZZ_NAMES)

clean:
	rm -rf build build-asan build-fuzz build-noverify build-deb

# Test objects come from a chain of pattern rules; keep them between runs.
.SECONDARY:

.PHONY: all check check-unit check-integration check-asan check-valgrind \
	check-faults check-system install uninstall deb \
	run stop bench bench-rebuild bench-recover bench-store bench-trim bench-snap bench-snap-diff bench-overhead bench-latency bench-keys fuzz \
	fuzz-build fuzz-long clean

-include $(shell find $(BUILD) $(wildcard $(FUZZ_BUILD)) -name '*.d' \
	-type f 2>/dev/null)

# bftblk: a Byzantine-fault-tolerant, erasure-coded network block device.
#
#   make                 build everything into build/
#   make check           unit + integration tests (what CI runs)
#   make check-unit      cmocka unit tests only
#   make check-asan      unit + integration tests built with ASan+UBSan
#   make check-valgrind  server and plugin under valgrind, short workload
#   make check-faults    Byzantine servers and clients, crashes, lincheck
#   make check-system    filesystems, kernel /dev/nbd0 and VM disks (root)
#   make run / make stop bring up a 4-server demo cluster and nbdkit
#   make bench           fio jobs against bftblk and nbdkit's memory plugin

SAN ?=
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
PKGS = libsodium libuv msgpack
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) nbdkit)
PKG_LIBS := $(shell pkg-config --libs $(PKGS)) -lerasurecode -lpthread
CFLAGS ?= $(OPT)
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	-fPIC -Icommon $(PKG_CFLAGS) $(SANFLAGS)
override LDFLAGS += $(SANFLAGS)

COMMON_SRC = $(wildcard common/*.c)
SERVER_SRC = $(wildcard server/*.c)
PLUGIN_SRC = $(wildcard nbd-plugin/*.c)
ADMIN_SRC  = $(wildcard admin/*.c)
UNIT_SRC   = $(wildcard tests/unit/test_*.c)
TOOL_SRC   = $(wildcard tests/tools/*.c)

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

LIBCOMMON = $(BUILD)/libbftcommon.a
SERVER    = $(BUILD)/bftblk-server
PLUGIN    = $(BUILD)/nbdkit-bftblk-plugin.so
ADMIN     = $(BUILD)/bftblk
UNIT_BINS = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOL_BINS = $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRC))
# Unit tests of server internals link the server's objects except main.
SERVER_LIB_OBJ = $(call obj,$(filter-out server/main.c,$(SERVER_SRC)))

all: $(SERVER) $(PLUGIN) $(ADMIN) $(UNIT_BINS) $(TOOL_BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBCOMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SERVER): $(call obj,$(SERVER_SRC)) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(PLUGIN): $(call obj,$(PLUGIN_SRC)) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -shared -o $@ $^ $(PKG_LIBS)

$(ADMIN): $(call obj,$(ADMIN_SRC)) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/tests/test_store $(BUILD)/tests/test_handler $(BUILD)/tests/test_clients: \
	$(SERVER_LIB_OBJ)
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(LIBCOMMON) \
		$(PKG_LIBS) $(shell pkg-config --libs cmocka)

# Benchmark tools; bench-hash also measures OpenSSL's SHA-256 against ours.
$(BUILD)/tests/%: $(BUILD)/tests/tools/%.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(shell pkg-config --libs libcrypto)

check-unit: all
	BUILD=$(BUILD) tests/run-unit

check-integration: all
	BUILD=$(BUILD) tests/run-integration

check: check-unit check-integration

check-asan:
	$(MAKE) SAN=1 check

# Byzantine servers, misbehaving clients and crashes, each scenario a
# script in tests/faults/, with histories checked for linearizability.
check-faults: all
	BUILD=$(BUILD) tests/run-integration \
	    $(filter-out tests/faults/lib.sh,$(wildcard tests/faults/*.sh))

# Real use: host filesystem over nbdfuse, a kernel /dev/nbd0 and a VM
# disk in TCG guests, fio as documented.  Guests boot in minutes here.
check-system: all
	BUILD=$(BUILD) BFTBLK_TEST_TIMEOUT=900 tests/run-integration \
	    $(wildcard tests/system/*.sh)

check-valgrind: all
	BUILD=$(BUILD) tests/run-integration tests/integration/valgrind.sh

# The demo script installs what is missing and builds by itself.
run:
	scripts/bftblk-demo start

stop:
	scripts/bftblk-demo stop

bench: all
	BUILD=$(BUILD) fio-jobs/bench

clean:
	rm -rf build build-asan

# Test objects come from a chain of pattern rules; keep them between runs.
.SECONDARY:

.PHONY: all check check-unit check-integration check-asan check-valgrind \
	check-faults check-system \
	run stop bench clean

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)

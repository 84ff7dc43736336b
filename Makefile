# rtgt - userspace iSCSI target on an in-process software RAID engine.
# `make` builds bin/rtgtd, bin/rtgtctl, bin/rtgt-bench; `make check` runs every
# test; `make run` serves conf/examples/quickstart.conf in the foreground.

CC      ?= cc
SAN     ?=
O       := build
PKGS    := libconfig liburing libisal libcrypto json-c
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wno-unused-parameter -Wformat=2 -Wvla \
           -D_GNU_SOURCE -I. -MMD -MP -pthread
LDLIBS  := -lconfig -luring -lisal -lcrypto -ljson-c -lpthread -lm
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
O       := build-san
endif
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)

LIB_SRCS  := $(wildcard conf/*.c net/*.c raid/*.c target/scsi/*.c target/iscsi/*.c) \
             $(filter-out target/daemon/main.c,$(wildcard target/daemon/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(O)/%.o)
D_SRCS    := target/daemon/main.c
D_OBJS    := $(D_SRCS:%.c=$(O)/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=bin/tests/%)
NET_SRCS  := $(wildcard tests/net/test_*.c)
NET_BINS  := $(NET_SRCS:tests/net/%.c=bin/tests/%)
TEST_HELPERS := $(wildcard tests/lib/*.c)
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(O)/%.o)

BINS := bin/rtgtd bin/rtgtctl bin/rtgt-bench

.PHONY: all run check unit nettest conformance clean deps lab
all: $(BINS)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(O)/librtgt.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

bin/rtgtd: $(D_OBJS) $(O)/librtgt.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $(D_OBJS) $(O)/librtgt.a $(LDLIBS)

bin/rtgtctl: $(O)/target/tools/rtgtctl.o $(O)/librtgt.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bin/rtgt-bench: $(O)/target/tools/rtgt-bench.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ -liscsi -ljson-c -lpthread -lm

bin/tests/%: $(O)/tests/unit/%.o $(TEST_HELPER_OBJS) $(O)/librtgt.a
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(O)/librtgt.a $(LDLIBS) $(CHECK_LIBS) -liscsi

bin/tests/%: $(O)/tests/net/%.o $(TEST_HELPER_OBJS) $(O)/librtgt.a
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(O)/librtgt.a $(LDLIBS) $(CHECK_LIBS) -liscsi

deps:
	@scripts/deps.sh

run: deps
	$(MAKE) all
	bin/rtgtd -c conf/examples/quickstart.conf

unit: $(UNIT_BINS)
	@scripts/run-tests.sh unit $(UNIT_BINS)

nettest: $(BINS) $(NET_BINS)
	@scripts/run-tests.sh net $(NET_BINS)

conformance: $(BINS)
	@scripts/conformance.sh

check: deps
	$(MAKE) all $(UNIT_BINS) $(NET_BINS)
	@scripts/run-tests.sh all $(UNIT_BINS) $(NET_BINS)
	@scripts/conformance.sh

lab: deps
	$(MAKE) all
	scripts/lab.sh $(LAB_ARGS)

clean:
	rm -rf build build-san bin

-include $(shell find build build-san -name '*.d' 2>/dev/null)

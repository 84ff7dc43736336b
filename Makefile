# rtgt - userspace iSCSI target on an in-process software RAID engine.
# `make` builds bin/rtgtd, bin/rtgtctl, bin/rtgt-bench; `make check` runs every
# test; `make run` serves conf/examples/quickstart.conf in the foreground;
# `make deb` builds the Debian package in build/deb/.

CC      ?= cc
SAN     ?=
TSAN    ?=
O       := build
# Binaries of the sanitizer build live apart (bin-san/) so that neither
# flavour can ever run a stale binary of the other; the test scripts find
# rtgtd and rtgtctl through $RTGTD / $RTGTCTL.
B       := bin
PREFIX  ?= /usr/local
DESTDIR ?=
MANDIR  ?= $(PREFIX)/share/man
FUZZ_SECONDS ?= 60
PKGS    := libconfig liburing libisal libcrypto json-c libmicrohttpd
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wno-unused-parameter -Wformat=2 -Wvla \
           -D_GNU_SOURCE -I. -MMD -MP -pthread $(shell pkg-config --cflags libmicrohttpd)
# libmicrohttpd serves daemon.metrics (target/daemon/metrics.c)
LDLIBS  := -lconfig -luring -lisal -lcrypto -ljson-c $(shell pkg-config --libs libmicrohttpd) \
           -lpthread -lm
# rbd pools (raid/rbd.c) when librbd-dev/librados-dev are installed; without
# them raid/rbd.c builds a stub that refuses rbd pools
LDLIBS  += $(shell test -e /usr/include/rbd/librbd.h && echo -lrbd -lrados)
# RTGT_DEBUG (conf/util.h): a broken invariant (RTGT_CHECK) aborts instead of
# being logged and counted, in every build meant to find bugs: SAN, TSAN, fuzz
ifeq ($(SAN),1)
CFLAGS  += -DRTGT_DEBUG -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
O       := build-san
B       := bin-san
# Any sanitizer report fails the test that triggered it, and every report of
# every process (also daemons whose exit status no test looks at) is looked
# for by scripts/san-report.sh: ASan/LSan write to var/san/ (log_path), gcc UBSan
# to stderr, i.e. the test logs.
SAN_DIR := $(CURDIR)/var/san
export ASAN_OPTIONS  := halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$(SAN_DIR)/asan:$(ASAN_OPTIONS)
export UBSAN_OPTIONS := halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$(SAN_DIR)/ubsan:$(UBSAN_OPTIONS)
# leaks inside third-party libraries, each documented in the file
export LSAN_OPTIONS  := suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0:$(LSAN_OPTIONS)
SAN_PRE    := rm -rf $(SAN_DIR) var/test-logs var/conformance.log && mkdir -p $(SAN_DIR)
SAN_REPORT := scripts/san-report.sh $(SAN_DIR)
else
SAN_PRE    := true
SAN_REPORT := true
endif
ifeq ($(TSAN),1)
ifeq ($(SAN),1)
$(error SAN=1 and TSAN=1 exclude each other: ThreadSanitizer cannot run with ASan)
endif
CFLAGS  += -DRTGT_DEBUG -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
O       := build-tsan
B       := bin-tsan
# A data race fails the process that saw it (exit code 66 from halt_on_error),
# and every report of every process, daemons included, lands in var/tsan/
# (log_path), where scripts/san-report.sh looks. Suppressions only for
# third-party libraries, each documented in the file.
TSAN_DIR := $(CURDIR)/var/tsan
export TSAN_OPTIONS := halt_on_error=1:second_deadlock_stack=1:log_path=$(TSAN_DIR)/tsan:suppressions=$(CURDIR)/scripts/tsan.supp:$(TSAN_OPTIONS)
SAN_PRE    := rm -rf $(TSAN_DIR) var/test-logs && mkdir -p $(TSAN_DIR)
SAN_REPORT := scripts/san-report.sh $(TSAN_DIR)
endif
export RTGTD    := $(CURDIR)/$(B)/rtgtd
export RTGTCTL  := $(CURDIR)/$(B)/rtgtctl
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)

# rtgtd's own files (daemon_int.h): linked into bin/rtgtd only
D_SRCS    := target/daemon/main.c target/daemon/reload.c target/daemon/status.c \
             target/daemon/entries.c target/daemon/vols.c
LIB_SRCS  := $(wildcard conf/*.c net/*.c raid/*.c target/scsi/*.c target/iscsi/*.c) \
             $(filter-out $(D_SRCS),$(wildcard target/daemon/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(O)/%.o)
D_OBJS    := $(D_SRCS:%.c=$(O)/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
# unit checks that are scripts (run in place, same output format)
UNIT_PY   := $(wildcard tests/unit/test_*.py)
NET_SRCS  := $(wildcard tests/net/test_*.c)
NET_BINS  := $(NET_SRCS:tests/net/%.c=$(B)/tests/%)
# network checks that are scripts (start their own rtgtd, same output format)
NET_PY    := $(wildcard tests/net/test_*.py)
# the Debian package, built, linted and installed into a throwaway root
# (about a minute): with the normal build only, the sanitizer builds add
# nothing to it
PKG_TESTS := $(if $(SAN)$(TSAN),,tests/pkg/test_pkg_deb.sh)
TEST_HELPERS := $(wildcard tests/lib/*.c)
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(O)/%.o)

BINS := $(B)/rtgtd $(B)/rtgtctl $(B)/rtgt-bench
# the manual pages, each beside its source; the section is the suffix
MAN_PAGES := target/tools/rtgt-bench.1 conf/rtgt.conf.5 target/daemon/rtgtd.8 \
             target/tools/rtgtctl.8

.PHONY: all run check unit nettest conformance clean deps lab fuzz fuzz-build install uninstall \
	tsan-check guest-check include-check layer-check man deb deb-check
all: $(BINS)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(O)/librtgt.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/rtgtd: $(D_OBJS) $(O)/librtgt.a
	@mkdir -p $(B)
	$(CC) $(LDFLAGS) -o $@ $(D_OBJS) $(O)/librtgt.a $(LDLIBS)

$(B)/rtgtctl: $(O)/target/tools/rtgtctl.o $(O)/target/tools/rtgtctl_live.o \
		$(O)/target/tools/ctlclient.o \
		$(O)/target/tools/rtgtctl_events.o $(O)/librtgt.a
	@mkdir -p $(B)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# rtgt-bench is a libiscsi client: of the project it needs the clock only
$(B)/rtgt-bench: $(O)/target/tools/rtgt-bench.o $(O)/conf/clock.o
	@mkdir -p $(B)
	$(CC) $(LDFLAGS) -o $@ $^ -liscsi -ljson-c -lpthread -lm

$(B)/tests/%: $(O)/tests/unit/%.o $(TEST_HELPER_OBJS) $(O)/librtgt.a
	@mkdir -p $(B)/tests
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(O)/librtgt.a $(LDLIBS) $(CHECK_LIBS) -liscsi

$(B)/tests/%: $(O)/tests/net/%.o $(TEST_HELPER_OBJS) $(O)/librtgt.a
	@mkdir -p $(B)/tests
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(O)/librtgt.a $(LDLIBS) $(CHECK_LIBS) -liscsi

deps:
	@scripts/deps.sh

# RUN_CONF=conf/examples/two-raid1.conf make run serves another example
RUN_CONF ?= conf/examples/quickstart.conf
run: deps
	$(MAKE) all
	$(B)/rtgtd -c $(RUN_CONF)

# $(BINS): tests/unit/test_man.py asks bin/rtgtd and bin/rtgtctl
unit: $(UNIT_BINS) $(BINS)
	@$(SAN_PRE)
	@scripts/run-tests.sh unit $(UNIT_BINS) $(UNIT_PY) || { $(SAN_REPORT); exit 1; }
	@$(SAN_REPORT)

nettest: $(BINS) $(NET_BINS)
	@$(SAN_PRE)
	@scripts/run-tests.sh net $(NET_BINS) $(NET_PY) || { $(SAN_REPORT); exit 1; }
	@$(SAN_REPORT)

conformance: $(BINS)
	@$(SAN_PRE)
	@scripts/conformance.sh || { $(SAN_REPORT); exit 1; }
	@$(SAN_REPORT)

# rtgt.conf(5)'s and conf/README.md's key tables, written from the key
# table (conf/conf_keys.c) by scripts/conf-keys.py; tests/unit/test_man.py
# fails when they are stale
man: $(B)/rtgtd
	scripts/conf-keys.py --rtgtd $(B)/rtgtd --write

# the dependency rules of the folder READMEs, on every #include (a second)
include-check:
	@scripts/check-includes.py

# the layer order of the folder READMEs, on the objects' own symbols: no
# call up the written order, no cycle (a second, after the build)
layer-check: all
	@scripts/check-layers.py $(O)

check: deps include-check
	$(MAKE) all $(UNIT_BINS) $(NET_BINS)
	@scripts/check-layers.py $(O)
	@$(SAN_PRE)
	@scripts/run-tests.sh all $(UNIT_BINS) $(UNIT_PY) $(NET_BINS) $(NET_PY) $(PKG_TESTS) || { $(SAN_REPORT); exit 1; }
	@scripts/conformance.sh || { $(SAN_REPORT); exit 1; }
	@$(SAN_REPORT)

# The ThreadSanitizer run of the daemon's concurrency around reload, task
# management, session reinstatement, an online grow under I/O, thin
# volumes' extents shared by threads and a pool reshaped under I/O, and
# the reload run again with members on tmpfs, where reads lend member
# memory (raid/README.md "Mapped reads"), and the metrics endpoint's
# connection threads against the reactors (a few minutes on 2 cores): bin-tsan/
# rtgtd and the tests built with TSAN=1, failing on any report.
TSAN_TESTS := test_net_reload test_net_login test_net_resize test_raid_thin test_raid_reshape \
              test_net_metrics
tsan-check: deps
	$(MAKE) TSAN=1 bin-tsan/rtgtd bin-tsan/rtgtctl $(TSAN_TESTS:%=bin-tsan/tests/%)
	@$(MAKE) --no-print-directory TSAN=1 tsan-run

tsan-run:
	@$(SAN_PRE)
	@scripts/run-tests.sh tsan $(B)/tests/test_net_reload || { $(SAN_REPORT); exit 1; }
	@RTGT_TEST_TMP=/dev/shm scripts/run-tests.sh tsan-shm $(B)/tests/test_net_reload \
		|| { $(SAN_REPORT); exit 1; }
	@CK_RUN_CASE=09_session_reinstatement scripts/run-tests.sh tsan $(B)/tests/test_net_login \
		|| { $(SAN_REPORT); exit 1; }
	@CK_RUN_CASE=01_resize_under_io scripts/run-tests.sh tsan $(B)/tests/test_net_resize \
		|| { $(SAN_REPORT); exit 1; }
	@scripts/run-tests.sh tsan $(B)/tests/test_raid_thin || { $(SAN_REPORT); exit 1; }
	@scripts/run-tests.sh tsan $(B)/tests/test_raid_reshape || { $(SAN_REPORT); exit 1; }
	@scripts/run-tests.sh tsan $(B)/tests/test_net_metrics || { $(SAN_REPORT); exit 1; }
	@$(SAN_REPORT)

# The fio job set from a real Linux initiator (a qemu guest; minutes):
# tests/guest/test_guest_fio.sh; a thin LUN and an online grow through
# the kernel's initiator, ext4, fstrim and resize2fs:
# tests/guest/test_guest_thin.sh; snapshots, clones, rollback and deletes
# on a raid5 pool: tests/guest/test_guest_snapshot.sh. Not part of check.
guest-check: all
	tests/guest/test_guest_fio.sh
	tests/guest/test_guest_thin.sh
	POOL=raid tests/guest/test_guest_thin.sh
	tests/guest/test_guest_snapshot.sh

lab: deps
	$(MAKE) all
	scripts/lab.sh $(LAB_ARGS)

# ---- fuzzing (tests/fuzz, libFuzzer; clang only, objects in build-fuzz/) ----
FUZZ_CC     ?= clang
FUZZ_O      := build-fuzz
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror -Wshadow \
               -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Wformat=2 \
               -Wno-format-nonliteral -Wvla -D_GNU_SOURCE -I. -MMD -MP -pthread \
               -DRTGT_DEBUG -fsanitize=fuzzer-no-link $(FUZZ_SAN)
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=bin/fuzz/%)

$(FUZZ_O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_O)/librtgt.a: $(LIB_SRCS:%.c=$(FUZZ_O)/%.o)
	rm -f $@ && ar rcs $@ $^

bin/fuzz/%: $(FUZZ_O)/tests/fuzz/%.o $(FUZZ_O)/librtgt.a
	@mkdir -p bin/fuzz
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(LDLIBS)

# keep the objects make would otherwise delete as intermediates
.SECONDARY: $(FUZZ_SRCS:%.c=$(FUZZ_O)/%.o)

fuzz-build: deps
	$(MAKE) $(FUZZ_BINS)

# Every target runs FUZZ_SECONDS on a scratch copy of its seed corpus; a
# crash, leak, sanitizer report or broken invariant fails the run and leaves
# its input under var/fuzz/.
fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

# ---- install ----
# The unit directory apart from PREFIX: Debian 12 packages keep units in
# /lib/systemd/system (make deb passes UNITDIR), a local install beside the
# binaries.
UNITDIR ?= $(PREFIX)/lib/systemd/system
MONITORING := target/daemon/monitoring/rtgt-dashboard.json target/daemon/monitoring/rtgt-alerts.yml
install: all
	@[ "$(SAN)$(TSAN)" = "" ] || { echo "install: use a normal build, not SAN=1 or TSAN=1" >&2; exit 2; }
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/rtgt/examples $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(PREFIX)/share/rtgt/monitoring \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 bin/rtgtd $(DESTDIR)$(PREFIX)/sbin/rtgtd
	install -m 0755 bin/rtgtctl bin/rtgt-bench $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 conf/examples/*.conf conf/examples/rtgt.conf.default \
		$(DESTDIR)$(PREFIX)/share/rtgt/examples/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	for p in $(MAN_PAGES); do install -m 0644 $$p $(DESTDIR)$(MANDIR)/man$${p##*.}/ || exit 1; done
	install -m 0644 $(MONITORING) $(DESTDIR)$(PREFIX)/share/rtgt/monitoring/
	install -m 0644 target/tools/rtgtctl.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/rtgtctl
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@DOCDIR@|$(PREFIX)/share/rtgt|g' \
		conf/systemd/rtgtd.service.in \
		> $(DESTDIR)$(UNITDIR)/rtgtd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/rtgtd.service
	install -d -m 0755 $(DESTDIR)/etc/rtgt
	@if [ -e $(DESTDIR)/etc/rtgt/rtgt.conf ]; then \
		echo "install: keeping existing $(DESTDIR)/etc/rtgt/rtgt.conf"; \
	else \
		install -m 0640 conf/examples/rtgt.conf.default $(DESTDIR)/etc/rtgt/rtgt.conf; \
	fi

# Leaves /etc/rtgt/rtgt.conf: it is the administrator's.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/rtgtd $(DESTDIR)$(PREFIX)/bin/rtgtctl \
		$(DESTDIR)$(PREFIX)/bin/rtgt-bench $(DESTDIR)$(UNITDIR)/rtgtd.service \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/rtgtctl
	rm -rf $(DESTDIR)$(PREFIX)/share/rtgt
	for p in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; done

# ---- Debian package (scripts/debian/, built in build/deb/) ----
# `make deb` builds build/deb/rtgt_VERSION_ARCH.deb with debhelper from a
# copy of this tree; `make deb-check` builds it, runs lintian, installs it
# into a throwaway root and checks what landed there (tests/pkg/).
deb: deps
	@scripts/deb.sh

deb-check: deps
	@scripts/run-tests.sh deb tests/pkg/test_pkg_deb.sh

clean:
	rm -rf build build-san build-tsan build-fuzz bin bin-san bin-tsan

-include $(shell find build build-san build-tsan build-fuzz -name '*.d' 2>/dev/null)

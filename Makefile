# kope - one hand-written GNU Makefile.
#
#   make                      build build/<this machine's arch>/kope (deps sysroot first if needed)
#   make test                 build and run every test program
#   make demo                 the main job on the embedded default (local ./kope.db)
#   make ARCH=riscv64         cross-build for the K3 (clang-19, RVV 1.0)
#   make ARCH=aarch64         cross-build for Kunpeng / Ascend hosts
#   make test SANITIZER=address,undefined
#   make install PREFIX=/opt/kope [DESTDIR=...]   kope and the K3 peers a board needs
#
# Options are make variables: ARCH, SANITIZER, CFLAGS (yours to change),
# V=1 (echo commands). The flags the project needs live in FINAL_CFLAGS.

HOST_ARCH := $(shell uname -m)
ARCH      ?= $(HOST_ARCH)
SANITIZER ?=
CFLAGS    ?= -O2 -g
LDFLAGS   ?=

DEPS_DIR  := build/deps
SYSROOT   := $(DEPS_DIR)/sysroot-$(ARCH)
comma     := ,
SUFFIX    := $(if $(SANITIZER),-$(subst $(comma),-,$(SANITIZER)))
BUILD     := build/$(ARCH)$(SUFFIX)

# clang-19 on the development machine; on a board whatever clang it has
CLANG     ?= $(if $(shell command -v clang-19 2>/dev/null),clang-19,clang)
QEMU_RV   := qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true
# KOPE_ISA: the instruction set the build targets, for `kope version` (the
# compiler's baseline where no -march is given)
RV_MARCH  := rv64gcv_zba_zbb_zbs
ifeq ($(ARCH),x86_64)
  KOPE_ISA := x86-64
  ifneq ($(HOST_ARCH),x86_64)
    CC    := $(CLANG) --target=x86_64-linux-gnu
  endif
  RUNNER  := qemu-x86_64
else ifeq ($(ARCH),riscv64)
  CC      := $(CLANG) --target=riscv64-linux-gnu -march=$(RV_MARCH) -mabi=lp64d
  KOPE_ISA := $(RV_MARCH)
  RUNNER  := $(QEMU_RV) -L /usr/riscv64-linux-gnu
  # platform/hostcheck.c must run on a core without V to say why kope stops
  # and answers --version itself on a core without V (main may be vectorised)
  HOSTCHECK_CFLAGS := -march=rv64gc_zba_zbb_zbs -DKOPE_BUILT_WITH_RVV -DKOPE_MIN_VLEN=256 \
                      -DKOPE_HOSTCHECK_VERSION='"$(shell sed -n 's/^\#define KOPE_VERSION "\(.*\)"/\1/p' core/version.h)"'
else ifeq ($(ARCH),aarch64)
  CC      := $(CLANG) --target=aarch64-linux-gnu
  KOPE_ISA := armv8-a
  RUNNER  := qemu-aarch64 -L /usr/aarch64-linux-gnu
else
  $(error ARCH=$(ARCH) is not supported: use x86_64, riscv64 or aarch64)
endif
ifeq ($(ARCH),$(HOST_ARCH))
  # native (the development machine, or `make` on a K3 / Kunpeng): no emulator
  RUNNER  :=
else
  # bookworm's riscv64 GNU ld (binutils 2.40) segfaults on kope's link: lld does not
  ARCH_LDFLAGS := -fuse-ld=lld
endif

WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wpointer-arith -Wformat=2 -Wno-unused-parameter
FINAL_CFLAGS  = -std=c11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -isystem $(SYSROOT)/include \
                -ffunction-sections -fdata-sections \
                -DKOPE_ARCH=\"$(ARCH)\" -DKOPE_ISA=\"$(KOPE_ISA)\" $(CFLAGS)
FINAL_LDFLAGS = $(if $(SLIM),-L$(SLIM)) -L$(SYSROOT)/lib -Wl,--gc-sections $(ARCH_LDFLAGS) $(LDFLAGS)
ifneq ($(SANITIZER),)
  FINAL_CFLAGS  += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
  FINAL_LDFLAGS += -fsanitize=$(SANITIZER)
else
  # Size (issue 24, bench/footprint.sh): kope is C that never unwinds (no
  # C++, no backtrace(), no pthread_cancel), so its own code carries no
  # .eh_frame (-g keeps .debug_frame for debuggers). Sanitizer builds keep
  # the tables: their runtimes may unwind through them.
  FINAL_CFLAGS  += -fno-asynchronous-unwind-tables -fno-unwind-tables
  # ... and links the static libraries' copies without theirs (SLIM below):
  # SQLite, mbedTLS, curl and cJSON are C too; their .eh_frame was ~110 KB
  # of the riscv64 binary.
  SLIM    := $(BUILD)/slim
endif
ifeq ($(ARCH),riscv64)
  # The board binary's PIE relocations as RELR (-z pack-relative-relocs,
  # ~100 KB smaller stripped): needs glibc >= 2.36 on the board and a linker
  # that knows it (lld; GNU ld >= 2.38). Left out where the linker refuses.
  RELR_LDFLAGS := $(shell echo 'int main(void){return 0;}' | $(CC) -x c - $(ARCH_LDFLAGS) \
                    -Wl,-z,pack-relative-relocs -o /dev/null 2>/dev/null && echo -Wl,-z,pack-relative-relocs)
  FINAL_LDFLAGS += $(RELR_LDFLAGS)
endif
ifeq ($(WERROR),1)
  FINAL_CFLAGS += -Werror
endif
LIBS      := -lcurl -lmbedtls -lmbedx509 -lmbedcrypto -lsqlite3 -lcjson -lopenblas -lpthread -lm

# Sources: every .c of a module folder belongs to libkope, except main.
MODULES   := core core/graph core/task core/context core/agent core/cli store net platform platform/judge platform/k3 platform/ascend
LIB_SRC   := $(filter-out core/cli/main.c,$(foreach m,$(MODULES),$(wildcard $(m)/*.c)))
EMBED_SRC := $(shell find platform/k3/embed platform/ascend/embed core/knowledge suites -type f 2>/dev/null | LC_ALL=C sort)
# --- platform/k3 (issue 3): candidates and the harness include the kernel ABI,
# so the binary carries it too (written next to the harness at build time).
EMBED_SRC += platform/kernel_abi.h
# --- platform/judge: the rules, cases and references every target's judge
# shares; the K3 harness and the Ascend host program are built from them.
EMBED_SRC += platform/judge/hargs.h platform/judge/verdict.h platform/judge/ref.c
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/embed.o
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
DEPS_STAMP := $(SYSROOT)/.stamp

ifneq ($(V),1)
  Q := @
endif

.PHONY: all test bench demo deps deps-all host-tools clean distclean install
all: $(BUILD)/kope $(RV_DEPS)

host-tools:
	$(Q)bash cross/host-tools.sh

# A sysroot is rebuilt only when cross/deps.sh changes (it keeps its own stamp).
# flock: two builds sharing one deps folder (worktrees, a second shell) wait
# for each other instead of both writing one sysroot at once.
$(DEPS_DIR)/sysroot-%/.stamp: cross/deps.sh cross/deps-probe.c | host-tools
	$(Q)mkdir -p $(DEPS_DIR) && ARCH=$* W=$(CURDIR)/$(DEPS_DIR) \
	    flock $(DEPS_DIR)/.lock-sysroot-$* bash cross/deps.sh
	@touch $@ # deps.sh left an up-to-date sysroot alone: make should know it is current
deps: $(DEPS_STAMP)
# Every sysroot, each with its probe run (under qemu for the cross ones).
deps-all: $(DEPS_DIR)/sysroot-x86_64/.stamp $(DEPS_DIR)/sysroot-riscv64/.stamp $(DEPS_DIR)/sysroot-aarch64/.stamp
# Off the board, RVV candidates are cross-built and linked against the
# riscv64 sysroot (OpenBLAS baseline): the x86_64 build needs it too.
ifneq ($(ARCH),riscv64)
RV_DEPS := $(DEPS_DIR)/sysroot-riscv64/.stamp
endif

$(BUILD)/obj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

# `kope version` names the OpenBLAS the K3 harness links (the riscv64
# sysroot's, whatever kope's own ARCH; kope itself links none of it): its
# version and TARGET from that sysroot's VERSIONS file, at build time.
RV_VERSIONS := $(DEPS_DIR)/sysroot-riscv64/VERSIONS
$(BUILD)/obj/core/cli/main.o: $(DEPS_DIR)/sysroot-riscv64/.stamp
$(BUILD)/obj/core/cli/main.o: FINAL_CFLAGS += -DKOPE_OPENBLAS='"$(strip $(shell \
    sed -n 's/^openblas-//p; s/^openblas TARGET=/TARGET=/p' $(RV_VERSIONS) 2>/dev/null | tr '\n' ' '))"'

$(BUILD)/obj/platform/hostcheck.o: platform/hostcheck.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(FINAL_CFLAGS) $(HOSTCHECK_CFLAGS) -c $< -o $@

# ---- install (issue 24): PREFIX is compiled into platform/k3/peers.c, the
# first place after the settings where kope looks for its peers (then
# beside the binary, then the build tree). The stamp holds the PREFIX the
# object was built with, rewritten only when it changes, so `make install
# PREFIX=x` rebuilds that one object and relinks.
PREFIX    ?= /usr/local
DESTDIR   ?=
PREFIX_STAMP := $(BUILD)/prefix.stamp
$(PREFIX_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' > $@
$(BUILD)/obj/platform/k3/peers.o: $(PREFIX_STAMP)
$(BUILD)/obj/platform/k3/peers.o: FINAL_CFLAGS += -DKOPE_PREFIX='"$(PREFIX)"'
# the plugin goes where kernels run under qemu, and it is built with the
# host's compiler for the host's qemu: only in a native install off riscv64
# (a riscv64 board runs kernels directly; a cross build's plugin is this
# machine's, not its target's)
INSTALL_PLUGIN := $(if $(filter riscv64,$(ARCH)),,$(if $(filter $(HOST_ARCH),$(ARCH)),$(BUILD)/libkope-icount.so))
install: $(BUILD)/kope $(DEPS_DIR)/sysroot-riscv64/.stamp $(INSTALL_PLUGIN)
	$(Q)bash cross/install.sh "$(DESTDIR)$(PREFIX)" $(BUILD)/kope $(DEPS_DIR)/sysroot-riscv64 $(INSTALL_PLUGIN)

# Files the binary carries (templates, harness, knowledge, suites): see
# platform/embed.h. One compressed blob (cross/embedz.c, a host program:
# HOSTCC builds it for the machine running make, whatever ARCH).
HOSTCC    ?= cc
$(BUILD)/host/embedz: cross/embedz.c
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) -O2 -std=c11 -Wall -Wextra $< -o $@
$(BUILD)/gen/embed.c: $(EMBED_SRC) $(BUILD)/host/embedz
	@mkdir -p $(dir $@)
	$(Q)$(BUILD)/host/embedz $@ $(EMBED_SRC)
$(BUILD)/obj/gen/embed.o: $(BUILD)/gen/embed.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

# Cold modules (command-line parsing and help, suite files read once, the
# Ascend target a K3 build carries but rarely runs) are compiled for size.
COLD_OBJ  := $(filter $(BUILD)/obj/core/cli/% $(BUILD)/obj/core/task/% $(BUILD)/obj/platform/ascend/%,$(LIB_OBJ)) \
             $(BUILD)/obj/core/cli/main.o
ifeq ($(SANITIZER),)
$(COLD_OBJ): FINAL_CFLAGS += -Os
endif

# The static libraries kope links, without .eh_frame (see SLIM above); the
# link finds these first, the sysroot's for everything else.
SLIM_LIBS := sqlite3 mbedtls mbedx509 mbedcrypto curl cjson
OBJCOPY   ?= $(if $(shell command -v llvm-objcopy-19 2>/dev/null),llvm-objcopy-19,objcopy)
SLIM_STAMP := $(if $(SLIM),$(SLIM)/.stamp)
$(BUILD)/slim/.stamp: $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(Q)for l in $(SLIM_LIBS); do $(OBJCOPY) --remove-section=.eh_frame $(SYSROOT)/lib/lib$$l.a \
	    $(dir $@)lib$$l.a || exit 1; done
	@touch $@

$(BUILD)/libkope.a: $(LIB_OBJ) $(SLIM_STAMP)
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJ)

$(BUILD)/kope: $(BUILD)/obj/core/cli/main.o $(BUILD)/libkope.a
	@echo "  LINK    $@"
	$(Q)$(CC) $(FINAL_CFLAGS) $< $(BUILD)/libkope.a $(FINAL_LDFLAGS) $(LIBS) -o $@

# Test programs link cmocka built for the same ARCH from trixie's source
# (cross/cmocka.sh), so the suite runs on riscv64 and aarch64 under qemu too.
TESTROOT := $(DEPS_DIR)/testroot-$(ARCH)
# Stamps reached only through pattern rules are "intermediate" to make, which
# deletes them after the run (and then re-runs the recipes in the shared
# build/deps next time): keep them.
.PRECIOUS: $(DEPS_DIR)/testroot-%/.stamp $(DEPS_DIR)/sysroot-%/.stamp
$(DEPS_DIR)/testroot-%/.stamp: cross/cmocka.sh $(DEPS_DIR)/sysroot-%/.stamp
	$(Q)ARCH=$* W=$(CURDIR)/$(DEPS_DIR) bash cross/cmocka.sh
	@touch $@
$(BUILD)/tests/%: tests/%.c $(BUILD)/libkope.a $(wildcard tests/*.h) $(TESTROOT)/.stamp
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(FINAL_CFLAGS) -isystem $(TESTROOT)/include -Itests $< $(BUILD)/libkope.a \
	    $(FINAL_LDFLAGS) $(LIBS) $(TESTROOT)/lib/libcmocka.a -o $@

# --- net/ tests (issue 4): the loopback TLS server they #include.
$(BUILD)/tests/test_llm $(BUILD)/tests/test_cli_llm $(BUILD)/tests/test_agent_llm $(BUILD)/tests/test_ascend_run: tests/tls_server.c
# ... and the check that `kope context` is what a run sends.
$(BUILD)/tests/test_agent_llm $(BUILD)/tests/test_ascend_run: tests/context_check.c

$(BUILD)/bench/%: bench/%.c $(BUILD)/libkope.a
	@mkdir -p $(dir $@)
	@echo "  BENCH   $@"
	$(Q)$(CC) $(FINAL_CFLAGS) $< $(BUILD)/libkope.a $(FINAL_LDFLAGS) $(LIBS) -o $@

test: $(BUILD)/kope $(TEST_BIN) $(RV_DEPS)
	$(Q)KOPE_BIN=$(CURDIR)/$(BUILD)/kope KOPE_ARCH=$(ARCH) RUNNER="$(RUNNER)" \
	    bash tests/run.sh $(TEST_BIN:%=$(CURDIR)/%)

bench: $(BUILD)/kope $(BENCH_BIN)

# The main job on the embedded default: `kope run` over the built-in suite
# with the offline tuner (no LLM needed), a local SQLite file (./kope.db),
# emulated k3 (qemu) off a RISC-V machine. DEMO_BUDGET trials per task: 2
# keeps the 64 tasks to a few minutes under qemu; run it again and the
# tuner starts from what the first run found (the graph remembers).
# DEMO_FLAGS=--full-shape verifies the large matmuls whole under qemu too.
DEMO_BUDGET ?= 2
DEMO_FLAGS ?=
# The report is written whatever the run's exit (a failed task is in it
# too); make demo then exits with the run's code.
demo: $(BUILD)/kope $(RV_DEPS)
	$(Q)test -e kope.db || $(RUNNER) $(BUILD)/kope init # only init makes a store
	$(Q)rc=0; $(RUNNER) $(BUILD)/kope run --offline --budget $(DEMO_BUDGET) $(DEMO_FLAGS) || rc=$$?; \
	    $(RUNNER) $(BUILD)/kope report --html kope-report.html && exit $$rc

# ---- QEMU instruction-count plugin (platform/k3/qemu/) -----------------------
# The host's dynamic qemu-riscv64 loads it to count the instructions of one
# kernel call (platform/k3/k3_icount.h). Built with the host compiler, only
# where kernels run emulated (ARCH=x86_64); cross/qemu-plugin.sh fetches
# qemu-plugin.h once from Debian's qemu source package into build/deps.
ICOUNT_SO := $(BUILD)/libkope-icount.so
# wherever kernels run emulated: any build on a machine that is not riscv64
# (a riscv64 kope under qemu-user takes the emulated path too)
ifneq ($(HOST_ARCH),riscv64)
all: $(ICOUNT_SO)
test: $(ICOUNT_SO)
demo: $(ICOUNT_SO)
endif
$(ICOUNT_SO): platform/k3/qemu/icount_plugin.c platform/k3/qemu/vcost_model.h platform/judge/siphash.h cross/qemu-plugin.sh
	@echo "  PLUGIN  $@"
	$(Q)W=$(CURDIR)/$(DEPS_DIR) bash cross/qemu-plugin.sh $@ $<

# ---- libFuzzer targets (tests/fuzz_*.c: the parsers of outside bytes) ----
# `make fuzz` builds each against a libkope instrumented for coverage and
# ASan+UBSan (clang with compiler-rt: Debian's libclang-rt-19-dev);
# `make fuzz-run FUZZ_SECONDS=60` runs each that long on its own corpus in
# build/x86_64-fuzz/. Not part of `make test`: a fuzz run is open-ended.
FUZZ_SAN   := fuzzer-no-link,address,undefined
FUZZ_BUILD := build/$(ARCH)-$(subst $(comma),-,$(FUZZ_SAN))
FUZZ_SRC   := $(wildcard tests/fuzz_*.c)
FUZZ_BIN   := $(FUZZ_SRC:tests/%.c=build/$(ARCH)-fuzz/%)
FUZZ_SECONDS ?= 60
.PHONY: fuzz fuzz-run
fuzz: $(FUZZ_BIN)
ifneq ($(BUILD),$(FUZZ_BUILD)) # the sub-make builds it with the rule above
$(FUZZ_BUILD)/libkope.a: FORCE
	$(Q)$(MAKE) --no-print-directory CC=$(CLANG) SANITIZER=$(FUZZ_SAN) $@
endif
build/$(ARCH)-fuzz/%: tests/%.c $(FUZZ_BUILD)/libkope.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	$(Q)$(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE -I. -isystem $(SYSROOT)/include \
	    -fsanitize=fuzzer,address,undefined $< $(FUZZ_BUILD)/libkope.a $(FINAL_LDFLAGS) $(LIBS) -o $@
fuzz-run: fuzz
	$(Q)for f in $(FUZZ_BIN); do mkdir -p $$f.corpus && echo "  RUN     $$f ($(FUZZ_SECONDS) s)" && \
	    $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$f.corpus > $$f.log 2>&1 || \
	    { tail -30 $$f.log; exit 1; }; done; echo "fuzz: $(words $(FUZZ_BIN)) targets, no crash"
.PHONY: FORCE
FORCE:

# ---- the board VM (issue 13): a whole riscv64 Linux machine with RVV 1.0 ---
# `make board-vm` builds (or reuses) the image from Debian's trixie packages
# (cross/board-vm.sh; cached in build/board-vm, rebuilt when the script
# changes). `make test-board` boots it and runs the riscv64 kope natively
# inside (tests/board/run.sh); BOARD_SMOKE=1 runs the CI subset. The riscv64
# test programs run natively in it: a subset (BOARD_PROGRAMS, default in
# tests/board/run.sh; BOARD_PROGRAMS=all for every one) within BOARD_BUDGET
# seconds (default 1800); all are built, cross-building them takes seconds.
BOARD_TESTS := $(patsubst tests/%.c,build/riscv64/tests/%,$(wildcard tests/test_*.c tests/board/test_*.c))
.PHONY: board-vm test-board
board-vm:
	$(Q)bash cross/host-tools.sh board
	$(Q)nice -n 10 bash cross/board-vm.sh image
test-board: board-vm
	$(Q)$(MAKE) --no-print-directory ARCH=riscv64 build/riscv64/kope $(if $(BOARD_SMOKE),build/riscv64/tests/board/test_board_seccomp,$(BOARD_TESTS))
	$(Q)$(MAKE) --no-print-directory ARCH=x86_64 build/x86_64/kope build/x86_64/bench/graph
	$(Q)BOARD_SMOKE=$(BOARD_SMOKE) BOARD_PROGRAMS="$(BOARD_PROGRAMS)" BOARD_BUDGET=$(BOARD_BUDGET) \
	    BOARD_PROG_TIMEOUT=$(BOARD_PROG_TIMEOUT) bash tests/board/run.sh

clean:
	rm -rf build/x86_64* build/riscv64* build/aarch64*
distclean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/core/cli/main.d

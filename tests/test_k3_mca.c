/*
 * tests/test_k3_mca.c - the opt-in llvm-mca model (platform/k3/mca.[ch],
 * the plugin's blocks=1, platform.k3.model): the block lines parse, and
 * malformed ones are refused; on exact blocks the entry vtype reaches
 * llvm-mca (LMUL 8 costs more than LMUL 1), an unknown vtype or an
 * unanalysable instruction leaves the region unmodelled, a cache file
 * holding other bytes is not taken; on a template kernel under qemu the
 * cycle sum is > 0, deterministic, and a rerun is all cache hits; through
 * the platform, every emulated outcome's method names the model.
 * The tests that need llvm-mca-22 / llvm-mc-22 (Debian's llvm-22), clang-19,
 * qemu-riscv64 or the built plugin skip, saying which is missing;
 * KOPE_LLVM_MCA=/nonexistent runs it as on a machine without llvm-22 (1
 * passes, 3 skip, the fallback to vcost checked on the way).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "platform/platform.h"
#include "platform/k3/k3_icount.h"
#include "platform/k3/k3_templates.h"
#include "platform/k3/mca.h"

#define RV_CC "clang-19 --target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs -mabi=lp64d"
#define RV_RUN "qemu-riscv64 -cpu rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,zba=true,zbb=true,zbs=true"

#define HEAD "kope-icount 2\n" \
             "region 0 insns 30 vector_ops 10 vector_mem 10 vsetvl 0 vcost 30 unmodelled 0\n" \
             "total insns 99 vector_ops 10 vector_mem 10 vsetvl 0 vcost 99 unmodelled 0 " \
             "regions 1 dropped 0 vcpus 1 stray 0 pid 7 forks 0\n"
/* vfadd.vv v8,v16,v24; vle32.v v0,(a2); add a2,a2,a3 - no vsetvli */
#define LOOP "57140c03076006023306d600"
/* vsetvli a0,a1,e32,m8,ta,ma first */
#define CFG_LOOP "57f5350d57140c03076006023306d600"
/* vsetvl a0,a1,a2 (vtype from a register), then vfadd.vv */
#define REG_LOOP "57f5c58057140c03"
/* vs4r.v v8,(a0); vl4re32.v v8,(a0); vmv4r.v v8,v16: whole registers, no vtype read */
#define WHOLE_REGS "270485620764856257b4019f"
/* addi a0,a0,1; jal ra,16; addi a0,a0,1; jal t0,8: calls (llvm-mca would charge 100 cycles each) */
#define CALLS "13051500ef00000113051500ef028000"
/* fence: no scheduling class in the spacemit-x60 model */
#define FENCE "0f00f00f"

/* As kope looks: $KOPE_LLVM_MCA / $KOPE_LLVM_MC when set (so
 * KOPE_LLVM_MCA=/nonexistent runs this program as on a machine without
 * llvm-22), else in PATH. */
static int have_mca(void)
{
    const char *a = getenv("KOPE_LLVM_MCA"), *b = getenv("KOPE_LLVM_MC");
    int ok_a = a && *a ? access(a, X_OK) == 0 : system("command -v llvm-mca-22 >/dev/null") == 0;
    int ok_b = b && *b ? access(b, X_OK) == 0 : system("command -v llvm-mc-22 >/dev/null") == 0;
    return ok_a && ok_b;
}

static void dir_for(const char *sub, char *dir, size_t cap)
{
    const char *tmp = getenv("KOPE_TEST_TMP");
    snprintf(dir, cap, "%s/%s", tmp && *tmp ? tmp : ".", sub);
    mkdir(dir, 0700);
}

/* The plugin's block lines are skipped by the counts parser (they come
 * after "total") and parsed by mca, which refuses what does not fit. */
static void test_block_lines_parse(void **state)
{
    (void)state;
    const char *ok = HEAD "blocks 1 lost 0\nblk 0 3 " LOOP "\nbx 0 0 19 10\n";
    struct k3_icount ic;
    assert_int_equal(k3_icount_parse(ok, strlen(ok), &ic), 0);
    assert_int_equal(ic.n_regions, 1);
    /* before "total" they are not the plugin's */
    const char *early = "kope-icount 2\nblocks 1 lost 0\n"
                        "total insns 9 vector_ops 0 vector_mem 0 vsetvl 0 vcost 9 unmodelled 0 regions 0 dropped 0\n";
    assert_int_equal(k3_icount_parse(early, strlen(early), &ic), PLAT_ERR_PROTOCOL);

    char dir[400], err[256], why[200];
    dir_for("mca-parse", dir, sizeof dir);
    struct k3_mca m;
    k3_mca_init(&m);
    /* open refuses a malformed model whether or not the tools exist */
    assert_int_equal(k3_mca_open(&m, "mca:X60;rm", dir, NULL, err, sizeof err), PLAT_ERR_BAD_TASK);
    assert_int_equal(k3_mca_open(&m, "mca:", dir, NULL, err, sizeof err), PLAT_ERR_BAD_TASK);
    /* the parser runs before any tool: a bare struct pointed at a work dir */
    k3_mca_init(&m);
    snprintf(m.cpu, sizeof m.cpu, "spacemit-x60");
    snprintf(m.work, sizeof m.work, "%s", dir);
    snprintf(m.cache, sizeof m.cache, "%s", dir);
    uint64_t c = 1;
    static const char *const bad[] = {
        HEAD,                                                         /* no block lines */
        HEAD "blocks 1 lost 0\nbx 0 0 19 10\n",                       /* record of no block */
        HEAD "blocks 1 lost 0\nblk 0 3 " LOOP "\nblk 0 3 " LOOP "\n", /* id twice */
        HEAD "blocks 1 lost 0\nblk 0 3 57140c0\n",                    /* odd hex */
        HEAD "blocks 1 lost 0\nblk 0 3 57140cXY\n",                   /* not hex */
        HEAD "blocks 1 lost 0\nblk 9000 3 " LOOP "\n",                /* id past the plugin's cap */
        HEAD "blocks 1 lost 0\nblk 0 3 " LOOP "\nbx 0 0 300 1\n",     /* vtype out of range */
        HEAD "blocks 1 lost 0\nsurprise\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(k3_mca_region_cycles(&m, bad[i], strlen(bad[i]), 0, &c, why, sizeof why),
                         PLAT_ERR_PROTOCOL);
        assert_int_equal(c, 0);
    }
    const char *lost = HEAD "blocks 0 lost 3\n";
    assert_int_equal(k3_mca_region_cycles(&m, lost, strlen(lost), 0, &c, why, sizeof why),
                     PLAT_ERR_UNSUPPORTED);
    assert_non_null(strstr(why, "lost"));
    /* a region with no records (the blocks of region 0 only) sums to 0 */
    assert_int_equal(k3_mca_region_cycles(&m, ok, strlen(ok), 1, &c, why, sizeof why), 0);
    assert_int_equal(c, 0);
}

static uint64_t cycles_of(struct k3_mca *m, const char *hex, unsigned n_insns, unsigned vt,
                          unsigned count, int want_rc, char *why, size_t why_len)
{
    char body[1024];
    snprintf(body, sizeof body, HEAD "blocks 1 lost 0\nblk 4 %u %s\nbx 0 4 %u %u\n", n_insns, hex, vt,
             count);
    uint64_t c = 0;
    int rc = k3_mca_region_cycles(m, body, strlen(body), 0, &c, why, why_len);
    if (rc != want_rc)
        fail_msg("block %s vt %u: rc %d (%s), wanted %d", hex, vt, rc, why, want_rc);
    return c;
}

/* Exact blocks: the entry vtype is what llvm-mca is told; the rules that
 * leave a region unmodelled; the cache compares the bytes. */
static void test_blocks_vtype_and_cache(void **state)
{
    (void)state;
    if (!have_mca()) {
        print_message("skip: llvm-mca-22 or llvm-mc-22 missing (Debian: apt-get install llvm-22)\n");
        skip();
    }
    char dir[1024], err[256], why[200];
    dir_for("mca-blocks", dir, sizeof dir);
    struct k3_mca m;
    assert_int_equal(k3_mca_open(&m, "mca:spacemit-x60", dir, NULL, err, sizeof err), 0);
    /* e32: vsew 2; m1 = vlmul 0, m8 = vlmul 3 */
    uint64_t m1 = cycles_of(&m, LOOP, 3, 2 << 3 | 0, 10, 0, why, sizeof why);
    uint64_t m8 = cycles_of(&m, LOOP, 3, 2 << 3 | 3, 10, 0, why, sizeof why);
    print_message("mca: 10 entries of vfadd+vle32+add: %llu cycles at e32,m1, %llu at e32,m8\n",
                  (unsigned long long)m1, (unsigned long long)m8);
    assert_true(m1 > 0);
    assert_true(m8 >= 4 * m1); /* eight register groups per instruction */
    /* twice the entries, twice the cycles */
    uint64_t m8x2 = cycles_of(&m, LOOP, 3, 2 << 3 | 3, 20, 0, why, sizeof why);
    assert_true(m8x2 >= 2 * m8 - 1 && m8x2 <= 2 * m8 + 1);
    /* unknown entry vtype: vector work before any vsetvli is not modelled ... */
    cycles_of(&m, LOOP, 3, 255, 10, PLAT_ERR_UNSUPPORTED, why, sizeof why);
    assert_non_null(strstr(why, "unknown vtype"));
    /* ... but a block that sets its own vtype first is, and whole-register
     * spills and reloads read no vtype (a prologue before any vsetvli) */
    assert_true(cycles_of(&m, CFG_LOOP, 4, 255, 10, 0, why, sizeof why) > 0);
    assert_true(cycles_of(&m, WHOLE_REGS, 3, 255, 10, 0, why, sizeof why) > 0);
    /* a register-form vsetvl: llvm-mca cannot know the vtype either */
    cycles_of(&m, REG_LOOP, 2, 2 << 3, 10, PLAT_ERR_UNSUPPORTED, why, sizeof why);
    assert_non_null(strstr(why, "register-form"));
    /* calls are analysed as jumps: a few cycles an entry, not 100 per call */
    uint64_t calls = cycles_of(&m, CALLS, 4, 2 << 3, 10, 0, why, sizeof why);
    print_message("mca: 10 entries of two addi and two calls: %llu cycles\n", (unsigned long long)calls);
    assert_true(calls > 0 && calls < 100);
    /* an instruction the scheduling model lacks: that block, not the run */
    cycles_of(&m, FENCE, 1, 2 << 3, 10, PLAT_ERR_UNSUPPORTED, why, sizeof why);
    assert_non_null(strstr(why, "not modelled"));

    /* a rerun is all hits and runs no tool */
    uint64_t runs = m.tool_runs, hits = m.hits;
    assert_int_equal(cycles_of(&m, LOOP, 3, 2 << 3 | 3, 10, 0, why, sizeof why), m8);
    assert_int_equal(m.tool_runs, runs);
    assert_int_equal(m.hits, hits + 1);

    /* a cache file under another block's name: its bytes differ, so it is
     * a miss and the block is analysed itself (a forged name gives no
     * block another's cycles) */
    struct k3_mca m2;
    char dir2[1100];
    snprintf(dir2, sizeof dir2, "%s/other", dir);
    mkdir(dir2, 0700);
    assert_int_equal(k3_mca_open(&m2, "mca:spacemit-x60", dir2, NULL, err, sizeof err), 0);
    cycles_of(&m2, LOOP, 3, 2 << 3 | 3, 10, 0, why, sizeof why); /* makes the file */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && f=$(ls spacemit-x60-* | head -1) && "
             "sed -i 's/^bytes .*/bytes 000000000000000000000000/; s/^cycles [0-9]*/cycles 1/' \"$f\" && "
             "grep -q 'cycles 1 ' \"$f\"", m2.cache);
    assert_int_equal(system(cmd), 0);
    runs = m2.tool_runs;
    assert_int_equal(cycles_of(&m2, LOOP, 3, 2 << 3 | 3, 10, 0, why, sizeof why), m8);
    assert_true(m2.tool_runs > runs);
}

/* A template kernel under qemu with blocks=1: region cycles > 0, the same
 * on a rerun of qemu, and the second analysis is all cache hits. */
static const char guest_main[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include \"kernel_abi.h\"\n"
    "__attribute__((noinline)) void kope_icount_begin(int r) { __asm__ volatile(\"\" : : \"r\"(r) : \"memory\"); }\n"
    "__attribute__((noinline)) void kope_icount_end(int r) { __asm__ volatile(\"\" : : \"r\"(r) : \"memory\"); }\n"
    "kope_elementwise_fn k_add;\n"
    "int main(void) {\n"
    "  size_t n = 4096; float *x = malloc(n * 4), *y = malloc(n * 4), *o = malloc(n * 4);\n"
    "  for (size_t i = 0; i < n; i++) { x[i] = (float)(i % 17) * 0.25f - 2.0f; y[i] = 1.0f; }\n"
    "  struct kope_scalars s = {0.5f, -1.0f, 1.0f, 1e-5f};\n"
    "  kope_icount_begin(0); kope_icount_end(0);\n"
    "  kope_icount_begin(1); k_add(n, x, y, o, &s); kope_icount_end(1);\n"
    "  printf(\"%g\\n\", o[5]); return 0; }\n";

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = malloc(1 << 20);
    *len = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (b)
        b[*len] = '\0';
    return b;
}

static void test_template_kernel_cycles(void **state)
{
    (void)state;
    char plugin[1024], dir[1024], cmd[8192], err[256], why[200];
    if (!have_mca() || system("command -v clang-19 >/dev/null && command -v qemu-riscv64 >/dev/null") != 0 ||
        k3_icount_plugin_find(NULL, plugin, sizeof plugin) != 0) {
        print_message("skip: llvm-mca-22/llvm-mc-22, clang-19, qemu-riscv64 or %s missing\n",
                      K3_ICOUNT_PLUGIN_NAME);
        skip();
    }
    dir_for("mca-guest", dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "%s/main.c", dir);
    FILE *f = fopen(cmd, "w");
    assert_non_null(f);
    fputs(guest_main, f);
    assert_int_equal(fclose(f), 0);
    int v[K3_PARAM_MAX];
    const struct k3_template *t = k3_template_for(PLAT_OP_ADD);
    plat_point_default(&t->sp, v);
    size_t len;
    char *src = k3_point_source(t, v, &len);
    assert_non_null(src);
    snprintf(cmd, sizeof cmd, "%s/add.c", dir);
    f = fopen(cmd, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(src, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(src);
    const char *root = test_src_root();
    snprintf(cmd, sizeof cmd,
             "cd '%s' && " RV_CC " -O2 -I%s/platform -Dkope_kernel=k_add -c add.c -o add.o && "
             RV_CC " -O2 -static -I%s/platform main.c add.o -o guest", dir, root, root);
    assert_int_equal(system(cmd), 0);

    uint64_t cyc[2] = {0, 0}, c0 = 0;
    struct k3_mca m;
    assert_int_equal(k3_mca_open(&m, "mca:spacemit-x60", dir, NULL, err, sizeof err), 0);
    for (int run = 0; run < 2; run++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && rm -f out.txt && " RV_RUN " -plugin %s,out=%s/out.txt,blocks=1 "
                 "./guest >/dev/null", dir, plugin, dir);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "%s/out.txt", dir);
        size_t n = 0;
        char *text = slurp(cmd, &n);
        assert_non_null(text);
        struct k3_icount ic;
        assert_int_equal(k3_icount_parse(text, n, &ic), 0);
        assert_int_equal(ic.n_regions, 2);
        uint64_t hits = m.hits, looks = m.lookups;
        int rc = k3_mca_region_cycles(&m, text, n, 1, &cyc[run], why, sizeof why);
        if (rc)
            fail_msg("run %d: %s", run, why);
        if (run == 1)
            assert_int_equal(m.hits - hits, m.lookups - looks); /* all hits */
        assert_int_equal(k3_mca_region_cycles(&m, text, n, 0, &c0, why, sizeof why), 0);
        print_message("mca: add n=4096 (template default) run %d: %llu cycles (spacemit-x60), "
                      "icount %llu, vcost %llu; markers alone %llu cycles; %llu lookups %llu hits, "
                      "%llu tool runs %.0f ms\n", run, (unsigned long long)cyc[run],
                      (unsigned long long)ic.region[1].insns, (unsigned long long)ic.region[1].vcost,
                      (unsigned long long)c0, (unsigned long long)m.lookups,
                      (unsigned long long)m.hits, (unsigned long long)m.tool_runs, m.tool_ms);
        free(text);
    }
    assert_true(cyc[0] > 0);
    assert_int_equal(cyc[1], cyc[0]);
    assert_true(c0 < cyc[0]);
}

/* ------------------------------------------ through the platform --- */

static const char *g_model;
static const char *own_str(const void *own, const char *target, const char *key)
{
    (void)own;
    return strcmp(target, "k3") == 0 && strcmp(key, "model") == 0 ? g_model : NULL;
}

static int measure_add(const char *model, const char *sub, struct plat_measure *mm)
{
    struct plat_settings s;
    plat_settings_init(&s);
    s.timeout_ms = 60000;
    s.min_repeat_ms = 5;
    s.max_repeats = 3;
    s.flags = PLAT_SET_NO_BASELINES;
    s.own_str = own_str;
    g_model = model;
    char work[1024], err[512];
    dir_for(sub, work, sizeof work);
    s.work_dir = work;
    struct platform *p = NULL;
    if (platform_open("k3", &s, &p, err, sizeof err)) {
        print_message("platform_open: %s\n", err);
        return -1;
    }
    struct plat_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "t-add");
    t.op = PLAT_OP_ADD;
    t.family = plat_op_family(PLAT_OP_ADD);
    plat_op_default_tol(PLAT_OP_ADD, &t.rtol, &t.atol);
    t.n = 4096;
    int v[K3_PARAM_MAX];
    const struct k3_template *tp = k3_template_for(PLAT_OP_ADD);
    plat_point_default(&tp->sp, v);
    size_t len;
    char *src = k3_point_source(tp, v, &len);
    struct plat_build b;
    int rc = src ? platform_compile(p, &t, src, len, &b) : -1;
    free(src);
    if (rc == 0 && b.ok) {
        rc = platform_measure(p, &t, &b, mm);
        platform_build_free(p, &b);
    } else {
        rc = -1;
    }
    platform_close(p);
    return rc;
}

static void test_model_named_in_method(void **state)
{
    (void)state;
    char plugin[1024];
    if (system("command -v qemu-riscv64 >/dev/null && command -v clang-19 >/dev/null") != 0 ||
        k3_icount_plugin_find(NULL, plugin, sizeof plugin) != 0) {
        print_message("skip: qemu-riscv64, clang-19 or %s missing\n", K3_ICOUNT_PLUGIN_NAME);
        skip();
    }
    struct plat_measure m;
    memset(&m, 0, sizeof m);
    assert_int_equal(measure_add(NULL, "mca-plat-default", &m), 0);
    assert_true(m.ok);
    assert_non_null(strstr(m.method, "model=vcost"));
    assert_int_equal(m.mca_cycles, 0);
    assert_true(m.vcost > 0);
    /* mca asked, but the tool is not there: vcost, and the method says so */
    char *was = getenv("KOPE_LLVM_MCA") ? strdup(getenv("KOPE_LLVM_MCA")) : NULL;
    setenv("KOPE_LLVM_MCA", "/nonexistent/llvm-mca-22", 1);
    memset(&m, 0, sizeof m);
    assert_int_equal(measure_add("mca:spacemit-x60", "mca-plat-absent", &m), 0);
    if (was)
        setenv("KOPE_LLVM_MCA", was, 1);
    else
        unsetenv("KOPE_LLVM_MCA");
    free(was);
    assert_non_null(strstr(m.method, "model=vcost (mca:spacemit-x60 asked"));
    assert_int_equal(m.mca_cycles, 0);
    if (!have_mca()) {
        print_message("skip (the rest): llvm-mca-22 or llvm-mc-22 missing\n");
        skip();
    }
    memset(&m, 0, sizeof m);
    assert_int_equal(measure_add("mca:spacemit-x60", "mca-plat-on", &m), 0);
    assert_true(m.ok);
    print_message("mca through the platform: method '%s'; vcost %llu, mca cycles %llu\n", m.method,
                  (unsigned long long)m.vcost, (unsigned long long)m.mca_cycles);
    assert_non_null(strstr(m.method, "model=mca:spacemit-x60"));
    assert_null(strstr(m.method, "mca: counted call"));
    assert_true(m.vcost > 0);
    assert_true(m.mca_cycles > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_lines_parse),
        cmocka_unit_test(test_blocks_vtype_and_cache),
        cmocka_unit_test(test_template_kernel_cycles),
        cmocka_unit_test(test_model_named_in_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

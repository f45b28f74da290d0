/*
 * tests/test_ascend.c - the Ascend target (platform/ascend) against kope's
 * fake CANN toolkit (tests/fake-cann): discovery and its "what is missing"
 * text, the npu-smi / platform_config / msprof parsers, the source screen,
 * and compile -> verify -> measure end to end for every op family and every
 * failure kind (compile error, signature mismatch, wrong result, unwritten
 * output, out-of-bounds write, AI Core exception, hang, screen).
 *
 * Everything here runs on the host CPU through the fake toolkit: it shows
 * that kope drives the documented CANN flow correctly, never how a kernel
 * behaves on an NPU. Results are asserted to be labelled emulated.
 */
#include "testutil.h"

#include "platform/ascend/ascend.h"
#include "platform/platform.h"

static char g_src[1024];      /* the source tree */
static char g_fake[1200];     /* tests/fake-cann */
static char g_smi[1300];      /* tests/fake-cann/driver/npu-smi */

static int src_root(char *buf, size_t cap)
{
    const char *s = getenv("KOPE_SRC");
    if (s && *s)
        return snprintf(buf, cap, "%s", s) < (int)cap ? 0 : -1;
    const char *bin = getenv("KOPE_BIN");
    const char *b = bin ? strstr(bin, "/build/") : NULL;
    if (!b)
        return access("tests/fake-cann/KOPE_FAKE_TOOLKIT", R_OK) == 0 && getcwd(buf, cap) ? 0 : -1;
    if ((size_t)(b - bin) >= cap)
        return -1;
    memcpy(buf, bin, (size_t)(b - bin));
    buf[b - bin] = '\0';
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static char *kernel_src(const char *name, size_t *len)
{
    char p[1400];
    snprintf(p, sizeof p, "%s/tests/ascend-kernels/%s", g_src, name);
    char *s = slurp(p, len);
    assert_non_null(s);
    return s;
}

/* The target's own keys, as the config would give them (platform.ascend.*). */
static const char *fake_own(const void *own, const char *target, const char *key)
{
    (void)own;
    assert_string_equal(target, "ascend");
    return strcmp(key, "home") == 0 ? g_fake : strcmp(key, "npu_smi") == 0 ? g_smi : NULL;
}

static void settings_fake(struct plat_settings *s)
{
    plat_settings_init(s);
    s->own_str = fake_own;
    s->work_dir = tpath("work");
    s->min_repeat_ms = 5;
    s->max_repeats = 30;
}

static struct platform *open_fake(void)
{
    struct plat_settings s;
    settings_fake(&s);
    struct platform *p = NULL;
    char err[600];
    int rc = platform_open("ascend", &s, &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "open: %s\n", err);
    assert_int_equal(rc, 0);
    return p;
}

static void task_init(struct plat_task *t, enum plat_op op)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "test-%s", plat_op_name(op));
    t->op = op;
    t->family = plat_op_family(op);
    plat_op_default_tol(op, &t->rtol, &t->atol);
}

static int setup(void **state)
{
    (void)state;
    if (src_root(g_src, sizeof g_src))
        return -1;
    snprintf(g_fake, sizeof g_fake, "%s/tests/fake-cann", g_src);
    snprintf(g_smi, sizeof g_smi, "%s/driver/npu-smi", g_fake);
    unsetenv("FAKE_MSPROF");
    unsetenv("FAKE_NPU_SMI");
    return 0;
}

/* ------------------------------------------------------------ parsers --- */

static void test_npu_smi_parse(void **state)
{
    (void)state;
    struct asc_toolkit tk;
    char out[8192];
    memset(&tk, 0, sizeof tk);
    assert_int_equal(run_cmd(out, sizeof out, "%s info", g_smi), 0);
    assert_int_equal(asc_npu_smi_parse(out, &tk), 1);
    assert_string_equal(tk.npu_name, "910B3");
    assert_string_equal(tk.npu_health, "OK");
    assert_string_equal(tk.smi_version, "23.0.rc3.fake");
    /* the newer layout (npu-smi 25.x, a Phy-Id column), three chips */
    static const char v25[] =
        "+------------------------------------------------------------------------------------+\n"
        "| npu-smi 25.5.1                    Version: 25.5.1                                    |\n"
        "+------------------------------------------------------------------------------------+\n"
        "| NPU     Name                | Health      | Power(W)  Temp(C)        Hugepages-Usage(page)|\n"
        "| Chip    Phy-Id              | Bus-Id      | AICore(%) Memory-Usage(MB)     HBM-Usage(MB)   |\n"
        "+============================+==============+============================+=================+\n"
        "| 0     Ascend910            | OK          | 171.3       41                0    /   0        |\n"
        "| 0     0                    | 0000:9D:00.0 |   0          0      /   0      46904 / 65536   |\n"
        "+------------------------------------------------------------------------------------+\n"
        "| 1     Ascend910            | Warning     | -          43                0    /   0        |\n"
        "| 1     1                    | 0000:9F:00.0 |   0          0      /   0      46582 / 65536   |\n"
        "+------------------------------------------------------------------------------------+\n"
        "| 2     Ascend910            | OK          | 160.4       43                0    /   0        |\n"
        "| 0     2                    | 0000:99:00.0 |   0          0      /   0      3123 / 65536    |\n";
    memset(&tk, 0, sizeof tk);
    assert_int_equal(asc_npu_smi_parse(v25, &tk), 3);
    assert_string_equal(tk.npu_name, "Ascend910");
    assert_string_equal(tk.smi_version, "25.5.1");
    memset(&tk, 0, sizeof tk);
    assert_int_equal(asc_npu_smi_parse("dcmi module initialize failed. ret is -8005\n", &tk), 0);
    assert_false(tk.npu_found);
}

static void test_soc_ini_parse(void **state)
{
    (void)state;
    char p[1400];
    snprintf(p, sizeof p, "%s/x86_64-linux/data/platform_config/Ascend910B3.ini", g_fake);
    char *t = slurp(p, NULL);
    assert_non_null(t);
    struct asc_toolkit tk;
    memset(&tk, 0, sizeof tk);
    assert_int_equal(asc_soc_ini_parse(t, &tk), 0);
    assert_int_equal(tk.ai_cores, 20);
    assert_int_equal(tk.vector_cores, 40);
    assert_int_equal(tk.ub_bytes, 196608);
    assert_int_equal(tk.l2_bytes, 201326592);
    free(t);
    memset(&tk, 0, sizeof tk);
    assert_int_equal(asc_soc_ini_parse("[SoCInfo]\nmemory_size=1\n", &tk), -1);
}

static void test_msprof_csv_parse(void **state)
{
    (void)state;
    double ns[8];
    int n = 0;
    static const char ok[] =
        "Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current Freq,Rated Freq\n"
        "kope_kernel_0_mix_aiv,vector,12.34,40,0,0,4242,1800,1800\n"
        "other_kernel,vector,99.0,40,0,0,4242,1800,1800\n";
    assert_int_equal(asc_msprof_csv_parse(ok, sizeof ok - 1, "kope_kernel", ns, &n, 8), 1);
    assert_int_equal(n, 1);
    assert_true(ns[0] > 12339.9 && ns[0] < 12340.1);
    /* full-width parentheses, quoted fields, CRLF, columns reordered */
    static const char wide[] =
        "\"Block Dim\",\"Task Duration\xef\xbc\x88us\xef\xbc\x89\",\"Op Name\"\r\n"
        "\"20\",\"3.5\",\"kope_kernel\"\r\n";
    n = 0;
    assert_int_equal(asc_msprof_csv_parse(wide, sizeof wide - 1, "kope_kernel", ns, &n, 8), 1);
    assert_true(ns[0] > 3499.9 && ns[0] < 3500.1);
    /* no Task Duration column: not understood */
    static const char none[] = "Op Name,Op Type,Block Dim\nkope_kernel,vector,40\n";
    n = 0;
    assert_int_equal(asc_msprof_csv_parse(none, sizeof none - 1, "kope_kernel", ns, &n, 8), -1);
    /* garbage values are skipped, the cap holds */
    static const char junk[] = "Op Name,Task Duration(us)\nkope_kernel,N/A\nkope_kernel,-1\nkope_kernel,2\n"
                               "kope_kernel,3\nkope_kernel,4\n";
    n = 0;
    assert_int_equal(asc_msprof_csv_parse(junk, sizeof junk - 1, "kope_kernel", ns, &n, 2), 2);
    assert_int_equal(n, 2);
    assert_int_equal(asc_msprof_collect(tpath("no-such-dir"), "kope_kernel", ns, 8), -1);
}

static void test_screen(void **state)
{
    (void)state;
    enum plat_screen_rule rule;
    char detail[256];
    size_t len;
    char *s = kernel_src("add_ok.cpp", &len);
    assert_int_equal(asc_screen_source(s, len, &rule, detail, sizeof detail), 0);
    free(s);
    s = kernel_src("add_system.cpp", &len);
    assert_int_equal(asc_screen_source(s, len, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_HEADER);
    free(s);
    static const char call[] = "#include \"kernel_operator.h\"\n"
                               "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x) {}\n"
                               "static int k = system (\"id\");\n";
    assert_int_equal(asc_screen_source(call, sizeof call - 1, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_CALL);
    assert_non_null(strstr(detail, "line 3"));
    static const char comment[] = "// system(\"id\") in a comment is fine\n"
                                  "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x) {}\n";
    assert_int_equal(asc_screen_source(comment, sizeof comment - 1, &rule, detail, sizeof detail), 0);
    static const char ctor[] = "__attribute__((constructor)) static void f(void) {}\n"
                               "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x) {}\n";
    assert_int_equal(asc_screen_source(ctor, sizeof ctor - 1, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_CTOR);
    static const char nok[] = "extern \"C\" void kope_kernel(GM_ADDR x) {}\n";
    assert_int_equal(asc_screen_source(nok, sizeof nok - 1, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_NO_KERNEL);
    static const char up[] = "#include \"lib/../../../etc/passwd\"\n"
                             "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x) {}\n";
    assert_int_equal(asc_screen_source(up, sizeof up - 1, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_HEADER);
    /* host-side code (issue 11): the kernel file is also compiled for the
     * host side of the library the host program links, so a host function,
     * a global object's constructor or a load-time initializer would run in
     * the process that judges; and nothing may hide words from this scan */
    s = kernel_src("add_host_strcmp.cpp", &len); /* interposes libc's strcmp */
    assert_int_equal(asc_screen_source(s, len, &rule, detail, sizeof detail), 1);
    assert_int_equal(rule, PLAT_SCREEN_CTOR);
    assert_non_null(strstr(detail, "line 11"));
    free(s);
#define KERN "extern \"C\" __global__ __aicore__ void kope_kernel(GM_ADDR x) { int a = 1; }\n"
    static const struct { const char *src; enum plat_screen_rule want; } bad[] = {
        {"static void grab(int *p) { *p = 1; }\n" KERN, PLAT_SCREEN_CTOR},
        {"struct G { G() { } };\nstatic G g;\n" KERN, PLAT_SCREEN_CTOR},
        {"struct G { __aicore__ G() {} };\nG g;\n" KERN, PLAT_SCREEN_STATE},
        {"struct G { __aicore__ G() {} };\nG g{};\n" KERN, PLAT_SCREEN_STATE},
        {"struct S { int a; } s;\n" KERN, PLAT_SCREEN_STATE},
        {"static int x = [] { return 1; }();\n" KERN, PLAT_SCREEN_STATE},
        {"int counter;\n" KERN, PLAT_SCREEN_STATE},
        {"struct S { static int n; };\n" KERN, PLAT_SCREEN_STATE},
        {"#define S(a, b) a##b\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"#define CT __attribute__((constructor))\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"#pragma clang attribute push (__attribute__((used)), apply_to = function)\n" KERN,
         PLAT_SCREEN_PRAGMA},
        /* issue 21: the shared allow-lists (platform/allow.h) */
        {"#pragma comment(lib, \"/etc/passwd\")\n" KERN, PLAT_SCREEN_PRAGMA},
        {"#pragma GCC optimize(\"O0\")\n" KERN, PLAT_SCREEN_PRAGMA},
        {"__attribute__((used)) static const int u = 1;\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"__attribute__((weak)) __aicore__ void w() {}\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"[[gnu::used]] constexpr int u = 1;\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"[[ gnu :: constructor ]] __aicore__ void f() {}\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"#if __has_include(</etc/passwd>)\n#endif\n" KERN, PLAT_SCREEN_HEADER},
        {"__declspec(dllexport) constexpr int u = 1;\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"#line 3 \"x.cpp\"\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"_Pragma(\"GCC visibility push(default)\")\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"static int q = sys\\\ntem(\"id\");\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"// a comment \\\nint counter;\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"%:include \"/etc/passwd\"\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"#import \"/etc/passwd\"\n" KERN, PLAT_SCREEN_HEADER},
        {"#embed \"/etc/passwd\"\n" KERN, PLAT_SCREEN_HEADER},
        {"constexpr const char *r = R\"(\")\"; int z;\n" KERN, PLAT_SCREEN_ATTRIBUTE},
        {"constexpr int N = 1'000; __attribute__((constructor)) void f() {}\n" KERN, PLAT_SCREEN_CTOR},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = asc_screen_source(bad[i].src, strlen(bad[i].src), &rule, detail, sizeof detail);
        if (rc != 1 || rule != bad[i].want)
            fprintf(stderr, "bad[%zu]: rc %d rule %d (%s)\n", i, rc, (int)rule, detail);
        assert_int_equal(rc, 1);
        assert_int_equal(rule, bad[i].want);
    }
    /* honest forms a kernel file uses stay allowed */
    static const char *const good[] = {
        "#define TILE 2048\n#define NEG (-3) // comment\n" KERN,
        "typedef struct { int a; } S;\nenum class E { A = 1, B };\nenum F : int { C = 2 };\n" KERN,
        "template <typename T> __aicore__ inline T mx(T a, T b) { return a > b ? a : b; }\n"
        "__aicore__ inline void fwd();\n" KERN,
        "static_assert(sizeof(float) == 4, \"f32\");\nconst float HALF = 0.5f;\n"
        "constexpr float TBL[3] = {1, 2, 3};\nnamespace { constexpr int Q = 3; }\n" KERN,
        "class K {\npublic:\n    __aicore__ inline K() {}\n"
        "    __aicore__ inline void Init(GM_ADDR x) { for (int i = 0; i < 3; i++) { v_ = i; } }\n"
        "    static constexpr int W = 4;\nprivate:\n    int v_;\n    int arr_[4] = {0};\n};\n"
        "constexpr int SEP = 1'000;\n" KERN,
        "#pragma unroll\n#pragma GCC unroll 4\n#\n"
        "__aicore__ inline __attribute__((always_inline)) int id(int v) { return v; }\n"
        "[[maybe_unused]] constexpr int M = 2;\n" KERN,
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int rc = asc_screen_source(good[i], strlen(good[i]), &rule, detail, sizeof detail);
        if (rc)
            fprintf(stderr, "good[%zu]: %s\n", i, detail);
        assert_int_equal(rc, 0);
    }
#undef KERN
    /* every starter passes the screen (test_starters builds them too) */
}

/* ---------------------------------------------------------- discovery --- */

static void test_no_toolkit(void **state)
{
    (void)state;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("ASCEND_HOME_PATH", tpath("nowhere/ascend-toolkit/latest"), 1);
    unsetenv("ASCEND_TOOLKIT_HOME");
    setenv("HOME", tpath("empty-home"), 1);
    struct platform *p = NULL;
    char err[600];
    int rc = platform_open("ascend", NULL, &p, err, sizeof err);
    if (access("/usr/local/Ascend/ascend-toolkit/latest", F_OK) == 0 ||
        access("/usr/local/Ascend/cann", F_OK) == 0) {
        /* a real toolkit on this host: the test's premise does not hold */
        platform_close(p);
        skip();
    }
    assert_int_equal(rc, PLAT_ERR_NO_TOOLCHAIN);
    assert_null(p);
    assert_non_null(strstr(err, "ASCEND_HOME_PATH"));
    assert_non_null(strstr(err, "is not a directory"));
    assert_non_null(strstr(err, "no CANN toolkit at the default paths either"));
    assert_non_null(strstr(err, "never on real Ascend hardware"));
    unsetenv("ASCEND_HOME_PATH");
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
}

static void test_probe_fake(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_probe pr;
    assert_int_equal(platform_probe(p, &pr), 0);
    assert_string_equal(pr.target, "ascend");
    assert_string_equal(pr.soc, "Ascend910B3");
    assert_int_equal(pr.n_cores, 20);
    assert_int_equal(pr.vector_cores, 40);
    assert_int_equal(pr.ub_bytes, 196608);
    assert_true(pr.emulated);
    assert_non_null(strstr(pr.note, "FAKE toolkit"));
    assert_non_null(strstr(pr.note, "never on real Ascend hardware"));
    assert_non_null(strstr(pr.toolkit, "8.0.RC2.fake"));
    assert_non_null(strstr(pr.toolkit, "msprof op yes"));
    assert_non_null(strstr(pr.toolkit, "aclnn vendor ops yes"));
    struct plat_desc d;
    platform_describe(p, &d);
    assert_string_equal(d.name, "ascend");
    assert_true(d.emulated);
    assert_non_null(strstr(d.note, "FAKE toolkit"));
    platform_close(p);
}

static void test_no_npu(void **state)
{
    (void)state;
    setenv("FAKE_NPU_SMI", "none", 1);
    struct platform *p = open_fake(); /* the toolkit alone opens */
    struct plat_probe pr;
    assert_int_equal(platform_probe(p, &pr), PLAT_ERR_NO_RUNNER);
    assert_non_null(strstr(p->err, "no NPU chip"));
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 16;
    size_t len;
    char *src = kernel_src("add_ok.cpp", &len);
    struct plat_build b;
    assert_int_equal(platform_compile(p, &t, src, len, &b), PLAT_ERR_NO_RUNNER);
    assert_non_null(strstr(p->err, "platform.ascend.soc"));
    free(src);
    platform_close(p);
    setenv("FAKE_NPU_SMI", "error", 1);
    p = open_fake();
    assert_int_equal(platform_probe(p, &pr), PLAT_ERR_NO_RUNNER);
    assert_non_null(strstr(p->err, "dcmi module initialize failed"));
    platform_close(p);
    unsetenv("FAKE_NPU_SMI");
}

/* ------------------------------------------------------------ end to end --- */

/* Build file for task t; expect ok or the given compile failure. */
static void build(struct platform *p, const struct plat_task *t, const char *file, struct plat_build *b)
{
    size_t len;
    char *src = kernel_src(file, &len);
    int rc = platform_compile(p, t, src, len, b);
    if (rc)
        fprintf(stderr, "compile %s: %s\n", file, p->err);
    assert_int_equal(rc, 0);
    free(src);
}

/* Verify a built candidate on task t: it must pass, labelled emulated. */
static void verify_built(struct platform *p, const struct plat_task *t, const struct plat_build *b)
{
    struct plat_verify *v = calloc(1, sizeof *v);
    assert_int_equal(platform_verify(p, t, b, v), 0);
    if (!v->pass)
        fprintf(stderr, "%s: %s %s\n", t->name, plat_fail_name(v->reason), v->detail);
    assert_true(v->pass);
    assert_true(v->emulated);
    assert_true(v->n_cases >= 8); /* task, reseeded, >= 6 awkward shapes */
    assert_string_equal(v->cases[1].label, "task-reseeded");
    int special = 0; /* the special-value case of the op's shape kind (verdict.h) ran, and passed */
    for (int i = 0; i < v->n_cases; i++)
        special += strstr(v->cases[i].label, "special") != NULL && v->cases[i].pass;
    assert_true(special >= 1 || t->op == PLAT_OP_SUM || t->op == PLAT_OP_MEAN); /* none for those two */
    free(v);
}

static void measure_built(struct platform *p, const struct plat_task *t, const struct plat_build *b,
                          struct plat_measure *m)
{
    assert_int_equal(platform_measure(p, t, b, m), 0);
    if (!m->ok)
        fprintf(stderr, "%s: %s %s\n", t->name, plat_fail_name(m->reason), m->detail);
    assert_true(m->ok);
    assert_true(m->emulated);
    assert_true(m->median_ns > 0);
    assert_true(m->repeats >= 3);
    for (int i = 0; i < m->n_baselines; i++)
        assert_true(m->base[i].ratio == 0); /* fake toolkit: no speed ratio claimed */
    assert_non_null(strstr(m->method, "FAKE TOOLKIT"));
}

/* Build file once for t; it must build. */
static void build_ok(struct platform *p, const struct plat_task *t, const char *file, struct plat_build *b)
{
    build(p, t, file, b);
    if (!b->ok)
        fprintf(stderr, "%s: %s\n%s\n", file, b->detail, b->diag);
    assert_true(b->ok);
}

static void test_family_elementwise(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    struct plat_build b;
    struct plat_measure m;
    task_init(&t, PLAT_OP_ADD);
    t.n = 4103; /* not a multiple of 8: the scalar tail runs */
    build_ok(p, &t, "add_ok.cpp", &b);
    verify_built(p, &t, &b);
    measure_built(p, &t, &b, &m);
    assert_non_null(strstr(m.method, "msprof op Task Duration"));
    assert_non_null(strstr(m.method, "device events"));
    assert_non_null(strstr(m.method, "baseline=aclnnAdd"));
    assert_int_equal(m.repeats, 20);
    /* the vendor operator as the named same-run baseline; no ratio on the fake */
    assert_int_equal(m.n_baselines, 1);
    assert_string_equal(m.base[0].name, "aclnnAdd");
    assert_true(m.base[0].median_ns > 0);
    assert_true(m.base[0].ratio == 0);
    /* msprof failing, or its CSV without the column: events timing stands */
    setenv("FAKE_MSPROF", "fail", 1);
    measure_built(p, &t, &b, &m);
    assert_non_null(strstr(m.method, "msprof op failed"));
    assert_null(strstr(m.method, "Task Duration,"));
    setenv("FAKE_MSPROF", "nocolumn", 1);
    measure_built(p, &t, &b, &m);
    assert_non_null(strstr(m.method, "no OpBasicInfo.csv with a Task Duration column"));
    unsetenv("FAKE_MSPROF");
    /* --no-baselines: the candidate alone */
    platform_build_free(p, &b);
    platform_close(p);
    struct plat_settings s;
    settings_fake(&s);
    s.flags |= PLAT_SET_NO_BASELINES;
    char err[600];
    assert_int_equal(platform_open("ascend", &s, &p, err, sizeof err), 0);
    build_ok(p, &t, "add_ok.cpp", &b);
    measure_built(p, &t, &b, &m);
    assert_int_equal(m.n_baselines, 0);
    platform_build_free(p, &b);
    platform_close(p);
}

static void test_family_activation(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    struct plat_build b;
    struct plat_measure m;
    task_init(&t, PLAT_OP_RELU);
    t.n = 3000;
    build_ok(p, &t, "relu_ok.cpp", &b);
    verify_built(p, &t, &b);
    measure_built(p, &t, &b, &m);
    platform_build_free(p, &b);
    platform_close(p);
}

static void test_family_reduction(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    struct plat_build b;
    struct plat_measure m;
    task_init(&t, PLAT_OP_SUM);
    t.rows = 13;
    t.cols = 4099;
    build_ok(p, &t, "sum_ok.cpp", &b);
    verify_built(p, &t, &b);
    measure_built(p, &t, &b, &m);
    platform_build_free(p, &b);
    platform_close(p);
}

static void test_family_matmul(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    struct plat_build b;
    struct plat_measure m;
    task_init(&t, PLAT_OP_GEMM);
    t.m = 33; t.n = 65; t.k = 47; t.batch = 2;
    build_ok(p, &t, "gemm_ok.cpp", &b); /* one build serves the family's ops */
    verify_built(p, &t, &b);
    measure_built(p, &t, &b, &m);
    task_init(&t, PLAT_OP_GEMM_NT);
    t.m = 9; t.n = 70; t.k = 31; t.batch = 1;
    verify_built(p, &t, &b);
    task_init(&t, PLAT_OP_GEMV);
    t.m = 129; t.n = 1; t.k = 257; t.batch = 1;
    verify_built(p, &t, &b);
    platform_build_free(p, &b);
    platform_close(p);
}

/* A candidate that builds and fails verification with `want`. */
static void verify_fails(struct platform *p, const char *file, enum plat_fail want, const char *detail_has)
{
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 1000;
    struct plat_build b;
    build(p, &t, file, &b);
    assert_true(b.ok);
    struct plat_verify *v = calloc(1, sizeof *v);
    assert_int_equal(platform_verify(p, &t, &b, v), 0);
    if (v->reason != want)
        fprintf(stderr, "%s: got %s (%s), want %s\n", file, plat_fail_name(v->reason), v->detail,
                plat_fail_name(want));
    assert_false(v->pass);
    assert_int_equal(v->reason, want);
    if (detail_has)
        assert_non_null(strstr(v->detail, detail_has));
    free(v);
    platform_build_free(p, &b);
}

static void test_fail_compile(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 64;
    struct plat_build b;
    build(p, &t, "add_compile_error.cpp", &b);
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
    assert_non_null(strstr(b.detail, "kernel build"));
    assert_non_null(strstr(b.diag, "undeclared_tile_count"));
    assert_true(strlen(b.diag) < PLAT_DIAG_MAX);
    /* verify of a failed build reports the build's failure */
    struct plat_verify *v = calloc(1, sizeof *v);
    assert_int_equal(platform_verify(p, &t, &b, v), 0);
    assert_int_equal(v->reason, PLAT_FAIL_COMPILE_ERROR);
    free(v);
    platform_build_free(p, &b);
    /* right syntax, wrong family signature: the launch does not compile */
    build(p, &t, "add_signature.cpp", &b);
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
    assert_non_null(strstr(b.detail, "host program build"));
    platform_build_free(p, &b);
    /* the screen refuses before anything is built */
    build(p, &t, "add_system.cpp", &b);
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_SCREEN_REJECTED);
    assert_int_equal(b.id, 0);
    platform_close(p);
}

static void test_fail_results(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    verify_fails(p, "add_wrong.cpp", PLAT_FAIL_WRONG_RESULT, "case task");
    verify_fails(p, "add_unwritten.cpp", PLAT_FAIL_UNWRITTEN_OUTPUT, NULL);
    verify_fails(p, "add_oob.cpp", PLAT_FAIL_OUT_OF_BOUNDS_WRITE, NULL);
    /* right on every ordinary range, NaN flushed to 0: only the special
     * values (verdict.h, shared with the K3 harness) catch it */
    verify_fails(p, "add_nan_flush.cpp", PLAT_FAIL_WRONG_RESULT, "case n=1031,special");
    platform_close(p);
}

/* A report that is not exactly what kope asked for (a case omitted,
 * renamed, with another shape, twice, one more, a line after `done`) is
 * refused, however good its cases look: the fake ACL runtime edits the
 * finished report of an honest kernel (FAKE_REPORT_EDIT), as code linked
 * into the host program could. Also in measure mode. */
static void test_report_edited(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 1000;
    struct plat_build b;
    build_ok(p, &t, "add_ok.cpp", &b);
    static const char *const edits[] = {"omit", "rename", "shape", "dup", "after", "extra"};
    struct plat_verify *v = calloc(1, sizeof *v);
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        setenv("FAKE_REPORT_EDIT", edits[i], 1);
        memset(v, 0, sizeof *v);
        assert_int_equal(platform_verify(p, &t, &b, v), 0);
        if (v->pass || v->reason != PLAT_FAIL_HARNESS)
            fprintf(stderr, "edit %s: %s %s\n", edits[i], plat_fail_name(v->reason), v->detail);
        assert_false(v->pass);
        assert_int_equal(v->reason, PLAT_FAIL_HARNESS);
        assert_non_null(strstr(v->detail, "report refused"));
    }
    struct plat_measure m;
    setenv("FAKE_REPORT_EDIT", "extra", 1);
    memset(&m, 0, sizeof m);
    assert_int_equal(platform_measure(p, &t, &b, &m), 0);
    assert_false(m.ok);
    assert_int_equal(m.reason, PLAT_FAIL_HARNESS);
    assert_non_null(strstr(m.detail, "report refused"));
    setenv("FAKE_REPORT_EDIT", "none", 1); /* knob set, nothing edited: passes */
    memset(v, 0, sizeof *v);
    assert_int_equal(platform_verify(p, &t, &b, v), 0);
    assert_true(v->pass);
    platform_build_free(p, &b);
    /* a wrong kernel whose report says PASS for every case (the flag comes
     * from strcmp in the host program: a candidate that interposed it) */
    build_ok(p, &t, "add_wrong.cpp", &b);
    setenv("FAKE_REPORT_EDIT", "forge", 1);
    memset(v, 0, sizeof *v);
    assert_int_equal(platform_verify(p, &t, &b, v), 0);
    assert_false(v->pass);
    assert_int_equal(v->reason, PLAT_FAIL_HARNESS);
    assert_non_null(strstr(v->detail, "PASS flag 1 with reason wrong_result"));
    unsetenv("FAKE_REPORT_EDIT");
    free(v);
    platform_build_free(p, &b);
    platform_close(p);
}

/* Every launch whose time counts is checked (issue 11): a kernel right for
 * fresh inputs and junk for repeated ones (it remembers its inputs in their
 * padding) passes verification and the pre/post-timing checks, and is caught
 * in the first timed sample. */
static void test_timed_launches_checked(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 1000;
    struct plat_build b;
    build_ok(p, &t, "add_stash_skip.cpp", &b);
    struct plat_verify *v = calloc(1, sizeof *v);
    assert_int_equal(platform_verify(p, &t, &b, v), 0);
    assert_true(v->pass); /* every verification launch has fresh inputs */
    free(v);
    struct plat_measure m;
    memset(&m, 0, sizeof m);
    assert_int_equal(platform_measure(p, &t, &b, &m), 0);
    if (m.ok || m.reason != PLAT_FAIL_WRONG_RESULT)
        fprintf(stderr, "stash-skip measure: %s %s\n", plat_fail_name(m.reason), m.detail);
    assert_false(m.ok);
    assert_int_equal(m.reason, PLAT_FAIL_WRONG_RESULT);
    assert_non_null(strstr(m.detail, "timed sample"));
    platform_build_free(p, &b);
    platform_close(p);
}

static void test_fail_runtime(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    verify_fails(p, "add_crash.cpp", PLAT_FAIL_CRASH, "507015");
    platform_close(p);
    struct plat_settings s;
    settings_fake(&s);
    s.timeout_ms = 4000;
    char err[600];
    assert_int_equal(platform_open("ascend", &s, &p, err, sizeof err), 0);
    verify_fails(p, "add_hang.cpp", PLAT_FAIL_TIMEOUT, "no result after");
    platform_close(p);
}

/* A toolkit whose aclnn headers differ from the documented ones: the host
 * program is rebuilt without the vendor baseline, candidates still build,
 * and measure says why there is no baseline. */
static void test_aclnn_headers_differ(void **state)
{
    (void)state;
    setenv("CXXFLAGS", "-DFAKE_ACLNN_HEADERS_DIFFER", 1); /* read by cmake at configure */
    struct platform *p = open_fake();
    struct plat_task t;
    struct plat_build b;
    struct plat_measure m;
    task_init(&t, PLAT_OP_ADD);
    t.n = 777;
    build_ok(p, &t, "add_ok.cpp", &b);
    measure_built(p, &t, &b, &m);
    assert_int_equal(m.n_baselines, 0);
    assert_non_null(strstr(m.method, "aclnn baseline off"));
    struct plat_desc d;
    platform_describe(p, &d);
    assert_non_null(strstr(d.note, "aclnn baseline off"));
    assert_non_null(strstr(d.note, "error"));
    platform_build_free(p, &b);
    /* a candidate's own host-side error is still its compile error */
    build(p, &t, "add_signature.cpp", &b);
    assert_false(b.ok);
    assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
    platform_build_free(p, &b);
    platform_close(p);
    unsetenv("CXXFLAGS");
}

/* The built-in starters: one build per family, every op of it verified
 * (task shape + awkward shapes + reseeded) against the shared references. */
static void test_starters(void **state)
{
    (void)state;
    struct platform *p = open_fake();
    for (int f = 0; f < PLAT_FAM_COUNT; f++) {
        struct plat_build b;
        struct plat_task t;
        int built = 0;
        for (int op = 0; op < PLAT_OP_COUNT; op++) {
            if ((int)plat_op_family((enum plat_op)op) != f)
                continue;
            task_init(&t, (enum plat_op)op);
            switch (t.family) {
            case PLAT_FAM_ELEMENTWISE: t.n = 1003; break;
            case PLAT_FAM_ACTIVATION:
                if (plat_op_is_rowwise(t.op)) { t.rows = 5; t.cols = 301; }
                else t.n = 1003;
                break;
            case PLAT_FAM_REDUCTION: t.rows = 7; t.cols = 1001; break;
            default:
                t.m = 19; t.k = 17; t.n = t.op == PLAT_OP_GEMV ? 1 : 33; t.batch = 1;
            }
            if (!built) {
                char *src = NULL, label[64];
                size_t len = 0;
                assert_int_equal(platform_starter(p, &t, &src, &len, label, sizeof label), 0);
                assert_non_null(strstr(label, plat_family_name(t.family)));
                assert_int_equal(platform_compile(p, &t, src, len, &b), 0);
                if (!b.ok)
                    fprintf(stderr, "starter %s: %s\n%s\n", label, b.detail, b.diag);
                assert_true(b.ok);
                free(src);
                built = 1;
            }
            struct plat_verify *v = calloc(1, sizeof *v);
            assert_int_equal(platform_verify(p, &t, &b, v), 0);
            if (!v->pass)
                fprintf(stderr, "starter for %s: %s: %s\n", plat_op_name(t.op), plat_fail_name(v->reason),
                        v->detail);
            assert_true(v->pass);
            free(v);
        }
        platform_build_free(p, &b);
    }
    platform_close(p);
}

/* The build runs in the compile sandbox (issue 21): with the source screen
 * off, a kernel that includes a host file finds nothing there (without the
 * sandbox it builds: the file is valid C++), and a failed build keeps only
 * what the compiler said about kernel.cpp, nothing of cmake, make or the
 * work dir. */
static void test_build_sandboxed(void **state)
{
    (void)state;
    static const char mark[] = "kope_marker_a5c3nd";
    char marker[600];
    snprintf(marker, sizeof marker, "/tmp/kope-asc-marker-%d.h", (int)getpid());
    FILE *f = fopen(marker, "w");
    assert_non_null(f);
    fprintf(f, "// %s\ntypedef int kope_marker_t;\n", mark);
    fclose(f);
    struct platform *p = open_fake();
    struct plat_desc d;
    platform_describe(p, &d);
    fprintf(stderr, "target: %s\n", d.note);
    int degraded = strstr(d.note, "compile-isolation=NO-NAMESPACES") != NULL;
    if (!degraded)
        assert_non_null(strstr(d.note, "compile-isolation=namespaces(user,pid,net,mount,ipc)+minimal-ro-root"));
    struct plat_task t;
    task_init(&t, PLAT_OP_ADD);
    t.n = 64;
    size_t len;
    char *ok = kernel_src("add_ok.cpp", &len);
    char *src = malloc(len + 700);
    assert_non_null(src);
    int n = snprintf(src, len + 700, "#include \"%s\"\n%s", marker, ok);
    struct plat_build b;
    p->set.flags |= PLAT_SET_UNSAFE_NO_SCREEN;
    assert_int_equal(platform_compile(p, &t, src, (size_t)n, &b), 0);
    p->set.flags &= ~(unsigned)PLAT_SET_UNSAFE_NO_SCREEN;
    fprintf(stderr, "%s: %s\n", b.detail, b.diag);
    assert_null(strstr(b.diag, mark));
    if (!degraded) {
        assert_false(b.ok);
        assert_int_equal(b.reason, PLAT_FAIL_COMPILE_ERROR);
        assert_true(strstr(b.diag, "No such file") || strstr(b.diag, "not found"));
    }
    platform_build_free(p, &b);
    /* a candidate's compile error: its own lines only */
    build(p, &t, "add_compile_error.cpp", &b);
    assert_false(b.ok);
    assert_non_null(strstr(b.diag, "kernel.cpp:"));
    assert_null(strstr(b.diag, "CMakeFiles"));
    assert_null(strstr(b.diag, "make"));
    assert_null(strstr(b.diag, "/work/"));
    for (const char *l = b.diag; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        assert_true(strncmp(l, "kernel.cpp", 10) == 0 || l[strspn(l, " 0123456789")] == '|' ||
                    strstr(l, "generated.") || strncmp(l, "compilation terminated.", 23) == 0);
    platform_build_free(p, &b);
    free(ok);
    free(src);
    platform_close(p);
    unlink(marker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npu_smi_parse),
        cmocka_unit_test(test_soc_ini_parse),
        cmocka_unit_test(test_msprof_csv_parse),
        cmocka_unit_test(test_screen),
        cmocka_unit_test(test_no_toolkit),
        cmocka_unit_test(test_probe_fake),
        cmocka_unit_test(test_no_npu),
        cmocka_unit_test(test_family_elementwise),
        cmocka_unit_test(test_family_activation),
        cmocka_unit_test(test_family_reduction),
        cmocka_unit_test(test_family_matmul),
        cmocka_unit_test(test_fail_compile),
        cmocka_unit_test(test_build_sandboxed),
        cmocka_unit_test(test_fail_results),
        cmocka_unit_test(test_fail_runtime),
        cmocka_unit_test(test_report_edited),
        cmocka_unit_test(test_timed_launches_checked),
        cmocka_unit_test(test_aclnn_headers_differ),
        cmocka_unit_test(test_starters),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

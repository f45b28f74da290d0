/*
 * tests/test_cli.c - the kope binary as a user runs it: exit codes (0 ok,
 * 1 failure, 2 usage), --help on every command, init/stats/show/log/dot,
 * export/import between two stores, and clear errors for bad input.
 */
#include "testutil.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <mbedtls/version.h>
#include <sqlite3.h>

#include "core/graph/graph.h"
#include "core/util.h"
#include "core/version.h"
#include "store/store.h"

static char out[1 << 16];

#define KOPE(...) run_cmd(out, sizeof out, "cd %s && %s " __VA_ARGS__)
#define DIR_ARGS getenv("KOPE_TEST_TMP") ? getenv("KOPE_TEST_TMP") : "/tmp", kope_bin()

static void test_version_and_usage(void **s)
{
    (void)s;
    assert_int_equal(KOPE("--version", DIR_ARGS), 0);
    assert_non_null(strstr(out, "kope 0."));
    assert_int_equal(KOPE("", DIR_ARGS), 2);
    assert_non_null(strstr(out, "usage: kope"));
    assert_int_equal(KOPE("frobnicate", DIR_ARGS), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    assert_int_equal(KOPE("--bogus graph stats", DIR_ARGS), 2);
    assert_int_equal(KOPE("--db", DIR_ARGS), 2);
    assert_int_equal(KOPE("graph", DIR_ARGS), 2);
    assert_int_equal(KOPE("graph nonsense", DIR_ARGS), 2);
    assert_int_equal(KOPE("init --weird", DIR_ARGS), 2);
}

static void test_help_everywhere(void **s)
{
    (void)s;
    assert_int_equal(KOPE("--help", DIR_ARGS), 0);
    /* every command in the table answers --help with exit 0 and a usage line */
    char list[sizeof out];
    snprintf(list, sizeof list, "%s", out);
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char cmd[32];
        if (strncmp(line, "  ", 2) != 0 || line[2] == ' ' || line[2] == '-' || sscanf(line, " %31s", cmd) != 1)
            continue;
        char o2[16384];
        int rc = run_cmd(o2, sizeof o2, "cd %s && %s %s --help", DIR_ARGS, cmd);
        if (rc != 0 || !strstr(o2, "usage"))
            fail_msg("`kope %s --help` exited %d: %s", cmd, rc, o2);
        rc = run_cmd(o2, sizeof o2, "cd %s && %s help %s", DIR_ARGS, cmd);
        assert_int_equal(rc, 0);
        n++;
    }
    assert_true(n >= 4);
    assert_int_equal(KOPE("graph export --help", DIR_ARGS), 0);
    assert_int_equal(KOPE("help nosuch", DIR_ARGS), 2);
}

static void test_init_stats(void **s)
{
    (void)s;
    assert_int_equal(KOPE("--db c1.db init", DIR_ARGS), 0);
    assert_non_null(strstr(out, "initialised c1.db"));
    assert_int_equal(KOPE("--db c1.db init", DIR_ARGS), 0);
    assert_non_null(strstr(out, "already initialised"));
    assert_int_equal(KOPE("--db c1.db graph stats", DIR_ARGS), 0);
    assert_non_null(strstr(out, "records   2"));
    assert_non_null(strstr(out, "identity    1"));
    /* KOPE_DB works like --db */
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && KOPE_DB=c1.db %s graph stats", DIR_ARGS), 0);
    assert_non_null(strstr(out, "store     c1.db"));
}

/* A store with a real decision tree, made through the library. */
static void make_store(const char *name)
{
    struct store *st;
    struct graph g;
    char err[256], ref[GRAPH_BLOB_REF];
    uint8_t task[32], d1[32], d2[32];
    unlink(tpath("%s.db", name));
    unlink(tpath("%s.db.key", name));
    assert_int_equal(store_open(tpath("%s.db", name), &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_identity_create(&g, tpath("%s.db.key", name), "k3"), 0);
    cJSON *spec = cJSON_Parse("{\"name\":\"rmsnorm_4096\",\"op\":\"rmsnorm\"}");
    assert_int_equal(graph_task_add(&g, "k3", spec, task), 0);
    cJSON_Delete(spec);
    assert_int_equal(graph_blob_put(&g, "void kope_kernel(void){}", 24, ref), 0);
    char body[256];
    snprintf(body, sizeof body, "{\"tags\":[\"lmul8\"],\"source\":\"%s\"}", ref);
    cJSON *b = cJSON_Parse(body);
    cJSON *o = cJSON_Parse("{\"status\":\"pass\",\"speedup\":3.25,\"baseline\":\"autovec\"}");
    assert_int_equal(graph_decision_add(&g, task, NULL, "k3", b, d1), 0);
    assert_int_equal(graph_outcome_add(&g, task, d1, "k3", o, NULL), 0);
    assert_int_equal(graph_decision_add(&g, task, d1, "k3", b, d2), 0);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"status\":\"timeout\",\"reason\":\"killed after 10 s\"}");
    assert_int_equal(graph_outcome_add(&g, task, d2, "k3", o, NULL), 0);
    cJSON_Delete(b);
    cJSON_Delete(o);
    graph_free(&g);
    store_close(st);
}

static void test_log_dot_show(void **s)
{
    (void)s;
    make_store("tree");
    assert_int_equal(KOPE("--db tree.db graph log rmsnorm_4096", DIR_ARGS), 0);
    assert_non_null(strstr(out, "task rmsnorm_4096"));
    assert_non_null(strstr(out, "pass 3.25x vs autovec"));
    assert_non_null(strstr(out, "timeout: killed after 10 s"));
    assert_non_null(strstr(out, "best path:"));
    assert_int_equal(KOPE("--db tree.db graph dot rmsnorm_4096", DIR_ARGS), 0);
    assert_non_null(strstr(out, "digraph kope"));
    assert_int_equal(KOPE("--db tree.db graph log no_such_task", DIR_ARGS), 1);
    assert_non_null(strstr(out, "no task named"));
    /* show by id prefix, taken from the log's first decision line */
    char *star = strstr(out, "digraph");
    (void)star;
    assert_int_equal(KOPE("--db tree.db graph log rmsnorm_4096", DIR_ARGS), 0);
    char *p = strstr(out, "* ");
    assert_non_null(p);
    char prefix[13];
    memcpy(prefix, p + 2, 12);
    prefix[12] = 0;
    assert_int_equal(KOPE("--db tree.db graph show %s", DIR_ARGS, prefix), 0);
    assert_non_null(strstr(out, "\"decision\""));
    assert_non_null(strstr(out, prefix)); /* the id is shown */
    assert_int_equal(KOPE("--db tree.db graph show XYZ", DIR_ARGS), 2);
    assert_int_equal(KOPE("--db tree.db graph show 0000000000000000", DIR_ARGS), 1);
}

static void test_export_import_cli(void **s)
{
    (void)s;
    make_store("src");
    unlink(tpath("dst.db"));
    assert_int_equal(KOPE("--db src.db graph export -o shard.jsonl", DIR_ARGS), 0);
    /* only init makes a store: an import into a mistyped path creates nothing */
    assert_int_equal(KOPE("--db dst.db graph import shard.jsonl", DIR_ARGS), 1);
    assert_non_null(strstr(out, "no store at dst.db"));
    assert_int_equal(KOPE("--db dst.db init", DIR_ARGS), 0);
    assert_int_equal(KOPE("--db dst.db graph import shard.jsonl", DIR_ARGS), 0);
    assert_non_null(strstr(out, "imported 8 new record(s), 0 already present, 0 rejected"));
    assert_int_equal(KOPE("--db dst.db graph import shard.jsonl", DIR_ARGS), 0);
    assert_non_null(strstr(out, "imported 0 new record(s), 8 already present"));
    assert_int_equal(KOPE("--db dst.db graph log rmsnorm_4096", DIR_ARGS), 0);
    /* a lying shard: exit 1, a message that says what was wrong */
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && sed 's/\"speedup\":3.25/\"speedup\":9.99/' shard.jsonl > bad.jsonl",
                             getenv("KOPE_TEST_TMP")), 0);
    assert_int_equal(KOPE("--db bad.db init", DIR_ARGS), 0);
    assert_int_equal(KOPE("--db bad.db graph import bad.jsonl", DIR_ARGS), 1);
    assert_non_null(strstr(out, "tampered"));
    assert_int_equal(KOPE("--db dst.db graph import no-such-file", DIR_ARGS), 1);
    assert_non_null(strstr(out, "no-such-file"));
    /* version vector round trip */
    assert_int_equal(KOPE("--db dst.db graph vector > vec.json && %s --db src.db graph export --since @vec.json -o none.jsonl",
                          DIR_ARGS, kope_bin()), 0);
    assert_non_null(strstr(out, "exported 0 record(s)"));
    assert_int_equal(KOPE("--db src.db graph export --since '[1]'", DIR_ARGS), 2);
}

static void test_bad_files(void **s)
{
    (void)s;
    assert_int_equal(run_cmd(out, sizeof out, "cd %s && head -c 100000 /dev/urandom > junk.db && echo '{\"llm\": [' > bad.json",
                             getenv("KOPE_TEST_TMP")), 0);
    assert_int_equal(KOPE("--db junk.db graph stats", DIR_ARGS), 1);
    assert_non_null(strstr(out, "junk.db"));
    /* bad JSON is a usage error (exit 2) at its line and column */
    assert_int_equal(KOPE("--config bad.json --db x.db init", DIR_ARGS), 2);
    assert_non_null(strstr(out, "bad.json:2:1: invalid JSON"));
    assert_int_equal(KOPE("--config missing.json --db x.db init", DIR_ARGS), 1);
    assert_non_null(strstr(out, "missing.json"));
    /* a store whose key file is gone: commands that need the identity say so */
    make_store("nokey");
    unlink(tpath("nokey.db.key"));
    assert_int_equal(KOPE("--db nokey.db graph export -o nokey.jsonl", DIR_ARGS), 0);
    assert_non_null(strstr(out, "warning: cannot read this device's key"));
    assert_int_equal(KOPE("--db nokey.db graph stats", DIR_ARGS), 0);
}

/* ---- `kope version`: every line checked against the real thing ----- */

/* The value of the line that starts with "name " in text, or fail. */
static const char *version_field(const char *text, const char *name, char *val, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, nl) == 0 && l[nl] == ' ') {
            size_t n = strcspn(l + nl + 1, "\n");
            snprintf(val, cap, "%.*s", (int)(n < cap ? n : cap - 1), l + nl + 1);
            return val;
        }
    }
    fail_msg("`kope version` has no \"%s\" line:\n%s", name, text);
    return NULL;
}

/* The architecture this test program (built like kope) was compiled for,
 * from the compiler's own macros rather than the Makefile's KOPE_ARCH. */
static const char *compiled_arch(void)
{
#if defined(__x86_64__)
    return "x86_64";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "unknown";
#endif
}

/* The OpenBLAS the K3 harness links: its version and core as that build of
 * OpenBLAS wrote them into the riscv64 sysroot's openblas_config.h (kope's
 * line comes from the sysroot's VERSIONS file: two independent sources). */
static void harness_openblas(char *version, size_t vcap, char *core, size_t ccap)
{
    char path[2300], line[512];
    snprintf(path, sizeof path, "%s/build/deps/sysroot-riscv64/include/openblas_config.h", test_src_root());
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s (the riscv64 sysroot the harness links)", path);
    version[0] = core[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        const char *ob = strstr(line, "OpenBLAS ");
        if (strncmp(line, "#define OPENBLAS_VERSION ", 25) == 0 && ob)
            snprintf(version, vcap, "%.*s", (int)strcspn(ob + 9, " \""), ob + 9);
        char name[64];
        if (sscanf(line, "#define OPENBLAS_CHAR_CORENAME \"%63[^\"]", name) == 1)
            snprintf(core, ccap, "%s", name);
    }
    fclose(f);
    if (!version[0] || !core[0])
        fail_msg("%s names no OPENBLAS_VERSION or OPENBLAS_CHAR_CORENAME", path);
}

static void test_version_fields(void **s)
{
    (void)s;
    char v[512], want[512];
    assert_int_equal(KOPE("version", DIR_ARGS), 0);
    char text[sizeof out];
    snprintf(text, sizeof text, "%s", out);

    snprintf(want, sizeof want, "%s (%s)", KOPE_VERSION, compiled_arch());
    assert_string_equal(version_field(text, "kope", v, sizeof v), want);
    assert_string_equal(version_field(text, "target", v, sizeof v), compiled_arch());

    /* the ISA: the extensions the compiler was told to use */
    version_field(text, "isa", v, sizeof v);
    if (strcmp(compiled_arch(), "riscv64") == 0) {
        assert_true(strncmp(v, "rv64gc", 6) == 0);
#ifdef __riscv_vector
        assert_true(strncmp(v, "rv64gcv", 7) == 0);
#endif
#ifdef __riscv_zba
        assert_non_null(strstr(v, "_zba"));
#endif
    } else if (strcmp(compiled_arch(), "x86_64") == 0) {
        assert_string_equal(v, "x86-64");
    } else {
        assert_non_null(strstr(v, "armv8"));
    }

    /* the vector length: this program reads vlenb itself */
    version_field(text, "vector", v, sizeof v);
#ifdef __riscv_vector
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb));
    snprintf(want, sizeof want, "length %lu bits", vlenb * 8);
    assert_true(strncmp(v, want, strlen(want)) == 0);
#else
    assert_true(strncmp(v, "length none", 11) == 0);
#endif

    /* the five libraries, each against its own version function */
    assert_string_equal(version_field(text, "sqlite", v, sizeof v), sqlite3_libversion());
    char mbed[16];
    mbedtls_version_get_string(mbed);
    assert_string_equal(version_field(text, "mbedtls", v, sizeof v), mbed);
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    snprintf(want, sizeof want, "%s (TLS %s)", cv->version, cv->ssl_version ? cv->ssl_version : "none");
    assert_string_equal(version_field(text, "libcurl", v, sizeof v), want);
    assert_string_equal(version_field(text, "cjson", v, sizeof v), cJSON_Version());
    char ob[64], core[64];
    harness_openblas(ob, sizeof ob, core, sizeof core);
    version_field(text, "openblas", v, sizeof v);
    snprintf(want, sizeof want, "%s", ob);
    assert_true(strncmp(v, want, strlen(want)) == 0); /* "0.3.29+ds": Debian's suffix follows */
    snprintf(want, sizeof want, "TARGET=%s ", core);
    assert_non_null(strstr(v, want));
    assert_non_null(strstr(v, "linked into the K3 harness, not into kope"));

    /* --version is its first line, also after a global option */
    assert_int_equal(KOPE("--db nowhere.db --version", DIR_ARGS), 0);
    assert_true(strchr(text, '\n') && strlen(out) == (size_t)(strchr(text, '\n') - text + 1));
    assert_true(strncmp(out, text, strlen(out)) == 0);
}

/* A riscv64 kope on a core without V: `kope version` says so from the
 * start-up check's V-free code instead of dying of SIGILL in main. */
static void test_version_without_vector_unit(void **s)
{
    (void)s;
    const char *bin = getenv("KOPE_BIN_TARGET");
    if (strcmp(compiled_arch(), "riscv64") != 0 || !bin || !*bin) {
        print_message("skip: needs the riscv64 kope under qemu-riscv64 (make test ARCH=riscv64)\n");
        skip();
    }
    char v[256];
    static const char *const forms[] = {"version", "--db x.db version", "--version"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        int rc = run_cmd(out, sizeof out,
                         "cd %s && qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu rv64,v=false %s %s",
                         getenv("KOPE_TEST_TMP"), bin, forms[i]);
        if (rc != (strcmp(forms[i], "--version") == 0 ? 0 : 1))
            fail_msg("`kope %s` without V exited %d:\n%s", forms[i], rc, out);
        assert_true(strncmp(version_field(out, "kope", v, sizeof v), KOPE_VERSION " (riscv64)",
                            strlen(KOPE_VERSION " (riscv64)")) == 0);
        if (i == 2)
            continue; /* --version: that one line */
        assert_true(strncmp(version_field(out, "isa", v, sizeof v), "rv64gcv", 7) == 0);
        assert_non_null(strstr(version_field(out, "vector", v, sizeof v), "no V extension"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_usage),
        cmocka_unit_test(test_version_fields),
        cmocka_unit_test(test_version_without_vector_unit),
        cmocka_unit_test(test_help_everywhere),
        cmocka_unit_test(test_init_stats),
        cmocka_unit_test(test_log_dot_show),
        cmocka_unit_test(test_export_import_cli),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}

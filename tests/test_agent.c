/*
 * tests/test_agent.c - the agent's offline path: the tuner's order, the
 * queue and run-state tables, and full `kope run`s of a small suite under
 * qemu with the offline tuner (budget 1 passes, a killed run resumes with
 * no trial lost or recorded twice), and `kope report --html`.
 */
#include "testutil.h"

#include <signal.h>
#include <time.h>

#include <cJSON.h>

#include "core/agent/agent.h"
#include "core/graph/graph.h"
#include "core/task/task.h"
#include "core/agent/tuner.h"
#include "core/util.h"
#include "store/queue.h"
#include "store/store.h"

static const char *SUITE =
    "{\"suite\":\"mini\",\"tasks\":["
    "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}},"
    "{\"name\":\"silu-a\",\"op\":\"silu\",\"dtype\":\"f32\",\"shape\":{\"n\":3000}},"
    "{\"name\":\"rms-a\",\"op\":\"rmsnorm\",\"dtype\":\"f32\",\"shape\":{\"rows\":2,\"cols\":500}},"
    "{\"name\":\"sum-a\",\"op\":\"sum\",\"dtype\":\"f32\",\"shape\":{\"rows\":3,\"cols\":300}},"
    "{\"name\":\"gemv-a\",\"op\":\"gemv\",\"dtype\":\"f32\",\"shape\":{\"m\":64,\"k\":100}}]}";

static const char *write_suite(void)
{
    const char *p = tpath("mini.json");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(SUITE, f);
    fclose(f);
    return p;
}

/* ------------------------------------------------------------- the tuner */

static void test_tuner_order(void **state)
{
    (void)state;
    struct plat_task t;
    memset(&t, 0, sizeof t);
    t.op = PLAT_OP_GEMV;
    t.m = 64;
    t.k = 100;
    const struct plat_space *tp = platform_space("k3", t.op);
    assert_non_null(tp);
    /* the space is the target's: ascend brings no tuning space */
    assert_null(platform_space("ascend", t.op));
    assert_null(platform_space("no-such-target", t.op));
    size_t nvalid = plat_space_count_valid(tp);
    struct tuner_trial *h = calloc(nvalid + 1, sizeof *h);
    assert_non_null(h);
    int v[PLAT_PARAM_MAX], def[PLAT_PARAM_MAX];
    const char *why;
    plat_point_default(tp, def);
    /* first: the default */
    assert_int_equal(tuner_next(tp, h, 0, NULL, v, &why), 0);
    assert_memory_equal(v, def, sizeof(int) * (size_t)tp->n_params);
    assert_string_equal(why, "default");
    /* a point's label (the decision's "params") reads back in its own space only */
    char label[128];
    int back[PLAT_PARAM_MAX];
    assert_int_equal(plat_point_label(tp, def, label, sizeof label), 0);
    assert_int_equal(plat_point_parse(tp, label, back), 0);
    assert_memory_equal(back, def, sizeof(int) * (size_t)tp->n_params);
    assert_int_not_equal(plat_point_parse(tp, "gemm MR=8 LMUL=1", back), 0);
    assert_int_not_equal(plat_point_parse(tp, "gemv NOPE=1", back), 0);
    /* a prior comes second */
    struct tuner_prior pr;
    tuner_prior_init(&pr);
    int pv[1][PLAT_PARAM_MAX];
    size_t idx = 0;
    while (plat_space_point(tp, idx, pv[0]) != 1 || memcmp(pv[0], def, sizeof(int) * (size_t)tp->n_params) == 0)
        idx++;
    pr.v = pv;
    pr.n = 1;
    h[0].has_point = 1;
    memcpy(h[0].v, def, sizeof def);
    h[0].pass = 1;
    h[0].score = 1;
    assert_int_equal(tuner_next(tp, h, 1, &pr, v, &why), 0);
    assert_memory_equal(v, pv[0], sizeof(int) * (size_t)tp->n_params);
    assert_string_equal(why, "prior");
    /* every valid point exactly once, then exhausted */
    size_t n = 1;
    for (;;) {
        int rc = tuner_next(tp, h, n, NULL, v, &why);
        if (rc == 1)
            break;
        assert_int_equal(rc, 0);
        assert_true(plat_point_valid(tp, v));
        for (size_t i = 0; i < n; i++)
            assert_false(memcmp(h[i].v, v, sizeof(int) * (size_t)tp->n_params) == 0);
        h[n].has_point = 1;
        memcpy(h[n].v, v, sizeof v);
        h[n].pass = 1;
        h[n].score = (double)(n % 7);
        n++;
        assert_true(n <= nvalid);
    }
    assert_int_equal(n, nvalid);
    free(h);
}

/* ------------------------------------------------- the task tree, read once */

/* Tree reads of one in-process `kope run --offline` of one task with this
 * budget, in a fresh store. */
static unsigned long tree_loads(const char *name, int budget)
{
    struct store *st;
    struct graph g;
    char err[1024], db[600], key[700];
    snprintf(db, sizeof db, "%s", tpath("%s.db", name));
    snprintf(key, sizeof key, "%s.key", db);
    const char *suite = tpath("%s.json", name);
    FILE *f = fopen(suite, "w");
    assert_non_null(f);
    fputs("{\"suite\":\"reads\",\"tasks\":[{\"name\":\"add-r\",\"op\":\"add\",\"dtype\":\"f32\","
          "\"shape\":{\"n\":1000}}]}", f);
    fclose(f);
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_identity_create(&g, key, "k3"), 0);
    struct agent_opts o;
    struct agent_summary s;
    agent_opts_init(&o);
    o.suite_path = suite;
    o.budget = budget;
    o.offline = 1;
    int rc = agent_run(&g, &o, &s, err, sizeof err);
    if (rc)
        fail_msg("agent_run: %s", err);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.res[0].trials, budget);
    agent_summary_free(&s);
    unsigned long n = g.n_tree_loads;
    graph_free(&g);
    store_close(st);
    return n;
}

/* The loop reads the task's tree from the store once, not once per trial:
 * the reads of a 4-trial run equal those of a 1-trial run. */
static void test_tree_read_once(void **state)
{
    (void)state;
    unsigned long one = tree_loads("reads1", 1), four = tree_loads("reads4", 4);
    print_message("tree reads: budget 1: %lu, budget 4: %lu\n", one, four);
    assert_true(one >= 1);
    assert_int_equal(four, one);
}

/* ------------------------------------------------------ queue, run state */

struct seen {
    int n;
    char state[16];
};
static int seen_cb(void *ctx, const struct store_queue_row *r)
{
    struct seen *s = ctx;
    s->n++;
    snprintf(s->state, sizeof s->state, "%s", r->state);
    return 0;
}

static void test_queue_store(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(tpath("q.db"), &st, err, sizeof err), 0);
    uint8_t task[32], prompt[32], reply[32];
    memset(task, 1, 32);
    memset(prompt, 2, 32);
    memset(reply, 3, 32);
    assert_int_equal(store_blob_put(st, prompt, "p", 1), 0);
    assert_int_equal(store_blob_put(st, reply, "r", 1), 0);
    int64_t q1, q2, n;
    assert_int_equal(store_queue_push(st, task, NULL, prompt, 1, &q1), 0);
    assert_int_equal(store_queue_push(st, task, task, prompt, 2, &q2), 0);
    assert_int_equal(store_queue_count(st, "pending", &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(store_queue_done(st, q1), STORE_ERR_CONFLICT); /* not sent yet */
    assert_int_equal(store_queue_retry(st, q1, 1234, "refused"), 0);
    assert_int_equal(store_queue_sent(st, q1, reply), 0);
    assert_int_equal(store_queue_sent(st, q1, reply), STORE_ERR_CONFLICT);
    assert_int_equal(store_queue_done(st, q1), 0);
    assert_int_equal(store_queue_done(st, q1), STORE_ERR_CONFLICT); /* exactly once */
    assert_int_equal(store_queue_drop(st, q1), STORE_ERR_CONFLICT);
    assert_int_equal(store_queue_drop(st, q2), 0);
    assert_int_equal(store_queue_drop(st, 999), STORE_ERR_NOTFOUND);
    struct seen s = {0};
    assert_int_equal(store_queue_get(st, q1, seen_cb, &s), 0);
    assert_string_equal(s.state, "done");
    assert_int_equal(store_queue_get(st, q2, seen_cb, &s), 0);
    assert_string_equal(s.state, "failed");
    /* run state */
    int64_t run, found;
    char *cur = NULL;
    assert_int_equal(store_run_find(st, "mini", "running", &found, &cur), STORE_ERR_NOTFOUND);
    assert_int_equal(store_run_new(st, "mini", "{\"tokens\":0}", 5, &run), 0);
    assert_int_equal(store_run_set(st, run, NULL, "{\"tokens\":7}"), 0);
    assert_int_equal(store_run_find(st, "mini", "running", &found, &cur), 0);
    assert_int_equal(found, run);
    assert_string_equal(cur, "{\"tokens\":7}");
    free(cur);
    assert_int_equal(store_run_set(st, run, "done", NULL), 0);
    assert_int_equal(store_run_find(st, "mini", "running", &found, NULL), STORE_ERR_NOTFOUND);
    assert_int_equal(store_integrity_check(st), 0);
    store_close(st);
}

/* ------------------------------------------------------------ kope run */

/* Count the decisions of every task in db, and the (task, run, trial)
 * duplicates among them. */
static void count_decisions(const char *db, int *n_dec, int *n_dup, int *n_ins, int *n_runs)
{
    double runs[16];
    *n_runs = 0;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    struct graph g;
    graph_init(&g, st);
    struct task_suite s;
    assert_int_equal(task_suite_parse(SUITE, strlen(SUITE), &s, err, sizeof err), 0);
    *n_dec = *n_dup = *n_ins = 0;
    for (size_t i = 0; i < s.n_tasks; i++) {
        uint8_t id[32];
        if (graph_task_find(&g, s.tasks[i].t.name, id))
            continue;
        struct graph_tree t;
        assert_int_equal(graph_tree_load(&g, id, &t), 0);
        *n_dec += (int)t.n;
        for (size_t a = 0; a < t.n; a++) {
            assert_true(t.nodes[a].has_outcome); /* never a decision without its outcome */
            const cJSON *ba = cJSON_GetObjectItemCaseSensitive(t.nodes[a].dec.json, "body");
            const cJSON *ra = cJSON_GetObjectItemCaseSensitive(ba, "run");
            assert_true(cJSON_IsNumber(ra));
            int known = 0;
            for (int q = 0; q < *n_runs; q++)
                known |= runs[q] == ra->valuedouble;
            if (!known && *n_runs < 16)
                runs[(*n_runs)++] = ra->valuedouble;
            for (size_t b = a + 1; b < t.n; b++) {
                const cJSON *bb = cJSON_GetObjectItemCaseSensitive(t.nodes[b].dec.json, "body");
                if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ba, "trial"),
                                  cJSON_GetObjectItemCaseSensitive(bb, "trial"), 1) &&
                    cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ba, "run"),
                                  cJSON_GetObjectItemCaseSensitive(bb, "run"), 1))
                    (*n_dup)++;
            }
        }
        graph_tree_free(&t);
    }
    struct store_stats ss;
    assert_int_equal(store_stats_get(st, &ss), 0);
    for (int k = 0; k < ss.n_kinds; k++)
        if (strcmp(ss.kinds[k].kind, "insight") == 0)
            *n_ins = (int)ss.kinds[k].n;
    assert_int_equal(store_integrity_check(st), 0);
    task_suite_free(&s);
    graph_free(&g);
    store_close(st);
}

static void test_run_budget1(void **state)
{
    (void)state;
    static char out[65536];
    const char *suite = write_suite();
    const char *db = tpath("b1.db");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\npassed 5/5 tasks\n"));
    /* the ratio against the autovec baseline is printed wherever one is
     * claimed (natively on a board; the vector-cost model under qemu-user);
     * natively in a virtual machine no time is a speed: none is claimed */
    if (test_native_vm()) {
        assert_non_null(strstr(out, "(no ratio claimed)"));
        assert_null(strstr(out, "autovec-O3"));
    } else {
        assert_non_null(strstr(out, "autovec-O3"));
        /* the best peer per task, and per family the geomean against it */
        assert_non_null(strstr(out, "vs best peer"));
        assert_non_null(strstr(out, "\ngeomean vs best peer"));
        assert_non_null(strstr(out, "tasks >= 1)\n"));
        if (test_emulated()) /* every emulated ratio carries its star */
            assert_non_null(strstr(out, "geomean vs best peer (* emulated: by the vector-cost model)"));
    }
    int nd, ndup, nins, nruns;
    count_decisions(db, &nd, &ndup, &nins, &nruns);
    assert_int_equal(nruns, 1);
    assert_int_equal(nd, 5);
    assert_int_equal(ndup, 0);
    assert_int_equal(nins, 5);
    /* the report renders, self-contained */
    const char *html = tpath("r.html");
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s report --html %s", kope_bin(), db, html), 0);
    char *page = NULL;
    size_t len;
    char err[256];
    assert_int_equal(util_read_file(html, 1 << 22, &page, &len, err, sizeof err), 0);
    assert_non_null(strstr(page, "<svg"));
    assert_non_null(strstr(page, "gemv-a"));
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "src="));
    assert_null(strstr(page, "href="));
    free(page);
    /* usage errors */
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s run --budget 0", kope_bin(), db), 2);
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s run --task nope --suite %s", kope_bin(), db, suite), 2);
}

/* Kill a run at a few points, resume; the end state is the same as an
 * uninterrupted run: budget x tasks decisions, no trial twice. */
static void test_run_kill_resume(void **state)
{
    (void)state;
    static char out[65536];
    const char *suite = write_suite();
    const char *db = tpath("k.db");
    test_store_init(db);
    const int budget = 3;
    srand((unsigned)time(NULL));
    int kills = 0, rc = -1;
    for (int k = 0; k < 4 && rc != 0; k++) {
        int ms = 700 + rand() % 2000;
        rc = run_cmd(out, sizeof out, "timeout -s KILL %d.%03d %s --db %s run --suite %s --budget %d --offline",
                     ms / 1000, ms % 1000, kope_bin(), db, suite, budget);
        kills += rc != 0;
    }
    if (rc != 0)
        rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget %d --offline", kope_bin(), db, suite,
                     budget);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_true(kills >= 1);
    assert_non_null(strstr(out, "\npassed 5/5 tasks\n"));
    /* every run that was started is complete, with exactly budget trials per
     * task (a run killed after its last commit counts as complete) */
    int nd, ndup, nins, nruns;
    count_decisions(db, &nd, &ndup, &nins, &nruns);
    assert_true(nruns >= 1);
    assert_int_equal(nd, 5 * budget * nruns);
    assert_int_equal(ndup, 0);
    assert_int_equal(nins, 5 * nruns);
    /* a second run is a new run that remembers: its trial 2 is the prior */
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --task silu-a --budget 2 --offline", kope_bin(), db,
                 suite);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "passed 1/1 tasks"));
}

/* --time-limit stops a run early (not done, exit 1); the next run resumes it. */
static void test_run_time_limit(void **state)
{
    (void)state;
    static char out[65536];
    const char *suite = write_suite();
    const char *db = tpath("tl.db");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 2 --offline --time-limit 1", kope_bin(), db,
                     suite);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "stopped: time limit 1 s reached"));
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 2 --offline", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "(resumed)"));
    assert_non_null(strstr(out, "\npassed 5/5 tasks\n"));
    int nd, ndup, nins, nruns;
    count_decisions(db, &nd, &ndup, &nins, &nruns);
    assert_int_equal(nruns, 1);
    assert_int_equal(nd, 10);
    assert_int_equal(ndup, 0);
    assert_int_equal(nins, 5);
}

/* Sources of a task's decisions: *n of them, *distinct different ones. */
static void count_sources(const char *db, const char *task, int *n, int *distinct)
{
    struct store *st;
    char err[256];
    struct graph g;
    struct graph_tree t;
    uint8_t id[32];
    assert_int_equal(store_open(db, &st, err, sizeof err), 0);
    graph_init(&g, st);
    assert_int_equal(graph_task_find(&g, task, id), 0);
    assert_int_equal(graph_tree_load(&g, id, &t), 0);
    *n = (int)t.n;
    *distinct = 0;
    for (size_t i = 0; i < t.n; i++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body"),
                                                          "source");
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body"),
                                                           "toolchain");
        assert_true(cJSON_IsString(s));
        assert_true(cJSON_IsString(tc) && tc->valuestring[0]);
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(t.nodes[k].dec.json, "body"), "source");
            seen = strcmp(o->valuestring, s->valuestring) == 0;
        }
        *distinct += !seen;
    }
    graph_tree_free(&t);
    graph_free(&g);
    store_close(st);
}

/* A re-run never re-measures a point the graph holds verified (same task,
 * target, toolchain, source): its budget goes to new points and it starts
 * from (and reports) the first run's best. --remeasure measures again. */
static void test_rerun_measures_new_points(void **state)
{
    (void)state;
    static char out[16384], out2[16384];
    const char *db = tpath("rerun.db");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --task silu-4864 --offline --budget 4", kope_bin(), db);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    rc = run_cmd(out2, sizeof out2, "%s --db %s run --task silu-4864 --offline --budget 4", kope_bin(), db);
    if (rc != 0)
        print_error("%s\n", out2);
    assert_int_equal(rc, 0);
    int n, distinct;
    count_sources(db, "silu-4864", &n, &distinct);
    assert_int_equal(n, 8);
    assert_int_equal(distinct, 8);           /* no point measured twice */
    /* the second run reports the task's best, which the first run found */
    const char *row1 = strstr(out, "\nsilu-4864 "), *row2 = strstr(out2, "\nsilu-4864 ");
    assert_non_null(row1);
    assert_non_null(row2);
    assert_memory_equal(row1, row2, strcspn(row1 + 1, "\n"));
    /* asked to, it measures again: the default point a second time */
    rc = run_cmd(out, sizeof out, "%s --db %s run --task silu-4864 --offline --budget 1 --remeasure", kope_bin(), db);
    assert_int_equal(rc, 0);
    count_sources(db, "silu-4864", &n, &distinct);
    assert_int_equal(n, 9);
    assert_int_equal(distinct, 8);
}

/* Under emulation a task too large to verify whole is verified at a reduced
 * shape (the task case cut to the emulation cap): all this machine can
 * judge of it. The run says so on the trial line, in the table ("reduced")
 * and in the summary, exits 0, and the report is written with it; graph log
 * says why there is no best. --full-shape verifies the whole shape instead:
 * then the task passes outright. Natively nothing is cut: skipped. */
static void test_reduced_shape_run(void **state)
{
    (void)state;
#if defined(__riscv)
    if (!test_emulated()) {
        print_message("skip: natively nothing is verified at a reduced shape\n");
        return;
    }
#endif
    static char out[65536];
    const char *suite = tpath("big.json");
    FILE *f = fopen(suite, "w");
    assert_non_null(f);
    /* 32 x 768 x 768 = 1.9e7 multiply-adds: just over the 1.7e7 verify cap */
    fputs("{\"suite\":\"big\",\"tasks\":[{\"name\":\"gemm-big\",\"op\":\"gemm\",\"dtype\":\"f32\","
          "\"shape\":{\"m\":32,\"n\":768,\"k\":768}}]}",
          f);
    fclose(f);
    const char *db = tpath("rs.db");
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline", kope_bin(), db, suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "trial 1/1"));
    assert_non_null(strstr(out, ", verified at reduced shape only\n"));
    assert_non_null(strstr(out, "\ngemm-big                     reduced "));
    assert_non_null(strstr(out, "\npassed 0/1 tasks, 1 verified at reduced shape only: emulated; full shape on a "
                                "board or with --full-shape\n"));
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s graph log gemm-big", kope_bin(), db), 0);
    assert_non_null(strstr(out, "verified at reduced shape only"));
    assert_non_null(strstr(out, "best path: none verified at the task's shape; passed at a reduced shape only"));
    const char *html = tpath("rs.html");
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s report --html %s", kope_bin(), db, html), 0);
    assert_non_null(strstr(out, "0 passed, 1 verified at reduced shape only (emulated)"));
    char *page = NULL;
    size_t len;
    char err[256];
    assert_int_equal(util_read_file(html, 1 << 22, &page, &len, err, sizeof err), 0);
    assert_non_null(strstr(page, "<td>reduced shape only</td>"));
    free(page);
    /* the whole shape, when the user accepts the time */
    db = tpath("rs-full.db");
    test_store_init(db);
    rc = run_cmd(out, sizeof out, "%s --db %s run --suite %s --budget 1 --offline --full-shape", kope_bin(), db,
                 suite);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "reduced"));
    assert_non_null(strstr(out, "\npassed 1/1 tasks\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuner_order),
        cmocka_unit_test(test_queue_store),
        cmocka_unit_test(test_tree_read_once),
        cmocka_unit_test(test_run_budget1),
        cmocka_unit_test(test_run_kill_resume),
        cmocka_unit_test(test_run_time_limit),
        cmocka_unit_test(test_rerun_measures_new_points),
        cmocka_unit_test(test_reduced_shape_run),
    };
    return cmocka_run_group_tests_name("agent", tests, NULL, NULL);
}

/*
 * tests/test_report.c - `kope report --html` (core/cli/cli_report.c) on a graph
 * built here through the real graph API and SQLite store: the per-family
 * geometric means against the best peer, log-scale ratio charts, "*" on
 * every emulated label, the best kernel's source (user seeds and user ops
 * marked), the tokens section only when an LLM was used, the roofline only
 * with native measurements and a native probe; and the page's geometry,
 * read back from the SVG: no label runs past its SVG's width at the
 * monospace font's real advance (0.6 em of 11 px), no tree edge crosses a
 * node label. Then headless Chromium (Debian's `chromium`) renders and
 * screenshots it; skipped with the reason printed when it is not installed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cJSON.h>

#include "testutil.h"

#include "core/graph/graph.h"
#include "core/util.h"
#include "store/store.h"

#define ADVANCE 6.6 /* px: monospace at font-size 11 */

struct dev {
    struct store *st;
    struct graph g;
};

static cJSON *obj(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    return j;
}

static void task(struct dev *d, const char *spec, uint8_t id[32])
{
    cJSON *s = obj(spec);
    assert_int_equal(graph_task_add(&d->g, "k3", s, id), 0);
    cJSON_Delete(s);
}

/* A decision (its source stored as a blob) and its outcome. */
static void trial(struct dev *d, const uint8_t t[32], const uint8_t *parent, const char *dec_extra,
                  const char *src, const char *outcome, uint8_t id[32])
{
    char ref[GRAPH_BLOB_REF], body[2048];
    assert_int_equal(graph_blob_put(&d->g, src, strlen(src), ref), 0);
    snprintf(body, sizeof body, "{\"source\":\"%s\",%s}", ref, dec_extra);
    cJSON *b = obj(body), *o = obj(outcome);
    assert_int_equal(graph_decision_add(&d->g, t, parent, "k3", b, id), 0);
    assert_int_equal(graph_outcome_add(&d->g, t, id, "k3", o, NULL), 0);
    cJSON_Delete(b);
    cJSON_Delete(o);
}

#define EMU "\"status\":\"pass\",\"emulated\":true,\"metric\":\"vcost\",\"baseline\":\"autovec-O3\""
static const char LONG_PARAMS[] =
    "gelu_tanh LMUL=4 GELU_FORM=1 TANH_METHOD=1 EXP_POLY=7 RECIP=0 a-very-long-label-that-must-"
    "not-be-clipped-at-the-edge-of-its-svg-xxxxxxxxxxxxxxxxxxxxxxxx";

static void build(struct dev *d, const char *db)
{
    char err[256];
    unlink(db);
    assert_int_equal(store_open(db, &d->st, err, sizeof err), 0);
    graph_init(&d->g, d->st);
    char key[4200];
    snprintf(key, sizeof key, "%s.key", db);
    unlink(key);
    assert_int_equal(graph_identity_create(&d->g, key, "k3"), 0);
    uint8_t a[32], b[32], c[32], u[32], e[32], d1[32], d2[32], d3[32], x[32];
    task(d, "{\"name\":\"gelu-a\",\"op\":\"gelu_tanh\",\"family\":\"activation\",\"shape\":{\"n\":64}}", a);
    /* root d1, its child d3, a second root d2, then d3's child: drawn in
     * insertion order, the edge d3 -> child runs down d3's column past the
     * second root's row, whose label starts further left: a crossing */
    trial(d, a, NULL, "\"proposer\":\"tuner\",\"params\":\"gelu_tanh LMUL=8\"", "/* a1 */",
          "{" EMU ",\"speedup\":2.0,\"ratios\":{\"autovec-O3\":2.0,\"scalar-O2\":5.0}}", d1);
    char params[512];
    snprintf(params, sizeof params, "\"proposer\":\"tuner\",\"params\":\"%s\"", LONG_PARAMS);
    trial(d, a, d1, params, "/* best of a: x < y && y > z */",
          "{" EMU ",\"speedup\":3.0,\"ratios\":{\"autovec-O3\":3.0,\"scalar-O2\":9.0}}", d3);
    trial(d, a, NULL, "\"proposer\":\"tuner\",\"params\":\"gelu_tanh LMUL=1 second root with a label\"",
          "/* a2 */", "{" EMU ",\"speedup\":1.5,\"ratios\":{\"autovec-O3\":1.5,\"scalar-O2\":4.0}}", d2);
    trial(d, a, d3, "\"proposer\":\"tuner\",\"params\":\"gelu_tanh LMUL=2\"", "/* a4 */",
          "{\"status\":\"wrong_result\",\"reason\":\"tail\"}", x);
    /* a user's seed is the best of b: best peer 8x (both baselines equal) */
    task(d, "{\"name\":\"silu-b\",\"op\":\"silu\",\"family\":\"activation\",\"shape\":{\"n\":64}}", b);
    trial(d, b, NULL, "\"proposer\":\"user\"", "/* the user's own silu */",
          "{" EMU ",\"speedup\":8.0,\"ratios\":{\"autovec-O3\":8.0,\"scalar-O2\":8.0}}", x);
    /* native: OpenBLAS is the best peer and beats the kernel (0.5x) */
    task(d, "{\"name\":\"gemv-c\",\"op\":\"gemv\",\"family\":\"matmul\",\"shape\":{\"m\":64,\"k\":64}}", c);
    trial(d, c, NULL, "\"proposer\":\"tuner\",\"params\":\"gemv LMUL=8 RB=1\"", "/* gemv */",
          "{\"status\":\"pass\",\"emulated\":false,\"metric\":\"time\",\"baseline\":\"autovec-O3\","
          "\"speedup\":2.0,\"ratios\":{\"autovec-O3\":2.0,\"openblas\":0.5},\"median_ns\":1000000,"
          "\"flops\":2000000,\"bytes\":4000000}", x);
    /* a user's op, and a task where nothing passed */
    task(d, "{\"name\":\"myop-u\",\"op\":\"myop\",\"user_op\":true,\"family\":\"elementwise\","
            "\"shape\":{\"n\":64}}", u);
    trial(d, u, NULL, "\"proposer\":\"user\"", "/* myop */",
          "{" EMU ",\"speedup\":1.2,\"ratios\":{\"autovec-O3\":1.2}}", x);
    task(d, "{\"name\":\"fail-e\",\"op\":\"add\",\"family\":\"elementwise\",\"shape\":{\"n\":64}}", e);
    trial(d, e, NULL, "\"proposer\":\"tuner\",\"params\":\"add LMUL=8\"", "/* e */",
          "{\"status\":\"compile_error\",\"reason\":\"x\"}", x);
    assert_int_equal(graph_checkpoint(&d->g), 0);
}

static void add_probe(struct dev *d)
{
    cJSON *b = obj("{\"emulated\":false,\"isa\":\"rv64gcv\",\"vlen_bits\":256,\"fma_mflops_core\":10000,"
                   "\"triad_mbs\":5000}");
    assert_int_equal(graph_append(&d->g, "probe", "k3", NULL, 0, b, NULL), 0);
    cJSON_Delete(b);
    assert_int_equal(graph_checkpoint(&d->g), 0);
}

static void add_llm_trial(struct dev *d)
{
    uint8_t t[32], x[32];
    assert_int_equal(graph_task_find(&d->g, "silu-b", t), 0);
    trial(d, t, NULL, "\"proposer\":\"llm\",\"tokens\":{\"in\":1200,\"out\":300}", "/* llm */",
          "{" EMU ",\"speedup\":0.9,\"ratios\":{\"autovec-O3\":0.9,\"scalar-O2\":0.9}}", x);
    assert_int_equal(graph_checkpoint(&d->g), 0);
}

static char *report(const char *db, const char *html)
{
    char out[4096], err[256];
    int rc = run_cmd(out, sizeof out, "%s --db %s report --html %s", kope_bin(), db, html);
    if (rc != 0)
        fail_msg("kope report: %d: %s", rc, out);
    char *page = NULL;
    size_t len;
    assert_int_equal(util_read_file(html, 1 << 24, &page, &len, err, sizeof err), 0);
    return page;
}

/* ------------------------------------------------- reading the SVG back --- */

/* Characters of an HTML text as rendered (an entity is one). */
static size_t text_len(const char *s, const char *end)
{
    size_t n = 0;
    for (; s < end; s++, n++)
        if (*s == '&') {
            const char *semi = memchr(s, ';', (size_t)(end - s));
            if (semi)
                s = semi;
        }
    return n;
}

static double attr(const char *tag, const char *tag_end, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s='", name);
    const char *p = strstr(tag, key);
    return p && p < tag_end ? atof(p + strlen(key)) : NAN;
}

struct box { double x0, y0, x1, y1; };
struct seg { double x0, y0, x1, y1; };

/* Every <svg>: its texts (left-anchored) fit its width; in tree SVGs no
 * polyline segment meets a text's box. Returns the number of SVGs. */
static int check_geometry(const char *page, int *n_trees)
{
    int n_svg = 0;
    *n_trees = 0;
    for (const char *s = strstr(page, "<svg "); s; s = strstr(s + 1, "<svg ")) {
        const char *end = strstr(s, "</svg>");
        assert_non_null(end);
        double w = attr(s, strchr(s, '>'), "width");
        assert_true(w > 0);
        const char *circle = strstr(s, "<circle");
        int is_tree = circle && circle < end; /* charts have no nodes */
        static struct box boxes[4096];
        static struct seg segs[8192];
        int nb = 0, ns = 0;
        for (const char *t = strstr(s, "<text "); t && t < end; t = strstr(t + 1, "<text ")) {
            const char *gt = strchr(t, '>'), *close = strstr(t, "</text>");
            if (strstr(t, "text-anchor") && strstr(t, "text-anchor") < gt)
                continue; /* tick labels, centred on their line */
            double x = attr(t, gt, "x"), y = attr(t, gt, "y");
            double right = x + ADVANCE * (double)text_len(gt + 1, close);
            if (right > w)
                fail_msg("label clipped: ends at %.0f px, svg width %.0f: %.*s", right, w,
                         (int)(close - gt - 1), gt + 1);
            if (nb < 4096)
                boxes[nb++] = (struct box){x, y - 9, right, y + 2};
        }
        for (const char *p = strstr(s, "<polyline points='"); p && p < end; p = strstr(p + 1, "<polyline ")) {
            double v[6];
            assert_int_equal(sscanf(p, "<polyline points='%lf,%lf %lf,%lf %lf,%lf'", &v[0], &v[1], &v[2],
                                    &v[3], &v[4], &v[5]), 6);
            if (ns < 8190) {
                segs[ns++] = (struct seg){v[0], v[1], v[2], v[3]};
                segs[ns++] = (struct seg){v[2], v[3], v[4], v[5]};
            }
        }
        /* the old straight edges: a line per parent/child, also checked */
        for (const char *p = strstr(s, "<line x1="); p && p < end; p = strstr(p + 1, "<line x1=")) {
            const char *gt = strchr(p, '>');
            if (is_tree && ns < 8190) /* only in tree SVGs: charts draw grid lines */
                segs[ns++] = (struct seg){attr(p, gt, "x1"), attr(p, gt, "y1"), attr(p, gt, "x2"),
                                          attr(p, gt, "y2")};
        }
        *n_trees += is_tree;
        for (int i = 0; i < ns; i++)
            for (int b = 0; b < nb; b++) {
                /* sample the segment: edges are short, 1 px steps are exact enough */
                double dx = segs[i].x1 - segs[i].x0, dy = segs[i].y1 - segs[i].y0;
                int steps = (int)(fabs(dx) + fabs(dy)) + 1;
                for (int k = 0; k <= steps; k++) {
                    double px = segs[i].x0 + dx * k / steps, py = segs[i].y0 + dy * k / steps;
                    if (px > boxes[b].x0 && px < boxes[b].x1 && py > boxes[b].y0 && py < boxes[b].y1)
                        fail_msg("tree edge (%.0f,%.0f)-(%.0f,%.0f) crosses a label at (%.0f,%.0f)",
                                 segs[i].x0, segs[i].y0, segs[i].x1, segs[i].y1, boxes[b].x0, boxes[b].y1);
                }
            }
        n_svg++;
        s = end;
    }
    return n_svg;
}

/* The text of the first element after marker up to "</tr>" (one table row). */
static const char *row_of(const char *page, const char *cell)
{
    static char row[2048];
    const char *p = strstr(page, cell);
    assert_non_null(p);
    const char *e = strstr(p, "</tr>");
    assert_non_null(e);
    snprintf(row, sizeof row, "%.*s", (int)(e - p), p);
    return row;
}

static void test_report_content_and_geometry(void **state)
{
    (void)state;
    struct dev d;
    const char *db = tpath("r.db");
    build(&d, db);
    char *page = report(db, tpath("r.html"));
    /* self-contained */
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "src="));
    assert_null(strstr(page, "href="));
    /* family geomeans vs the best peer: activation sqrt(3 x 8) = 4.90 (a's
     * best is 3x against autovec-O3, b's 8x), matmul 0.50 (OpenBLAS wins) */
    assert_non_null(strstr(row_of(page, "<tr><td>activation</td>"), "<td>4.90x*</td><td>2/2</td>"));
    assert_non_null(strstr(row_of(page, "<tr><td>matmul</td>"), "<td>0.50x</td><td>0/1</td>")); /* native */
    /* all: (3 x 8 x 0.5 x 1.2)^(1/4) = 1.95; 3 of 4 at least the best peer */
    assert_non_null(strstr(row_of(page, "<tr><td><b>all</b></td>"), "<b>1.95x*</b></td><td><b>3/4</b>"));
    /* log scale: the 1x line and ticks both sides of it */
    assert_non_null(strstr(page, "(log scale)"));
    assert_non_null(strstr(page, ">0.5x</text>"));
    assert_non_null(strstr(page, ">1x</text>"));
    assert_non_null(strstr(page, ">5x</text>"));
    /* "*" on every emulated label, none on the native one */
    assert_non_null(strstr(page, ">gelu-a *</text>"));
    assert_non_null(strstr(page, "3.00x vs autovec-O3 *</text>"));
    assert_non_null(strstr(page, ">gemv-c</text>"));
    assert_non_null(strstr(page, "0.50x vs openblas</text>"));
    assert_null(strstr(page, "gemv-c *"));
    assert_non_null(strstr(page, ": pass 3.00x*</text>"));       /* tree labels too */
    assert_non_null(strstr(row_of(page, "<tr><td>gelu-a</td>"), "autovec-O3 3.00x*, scalar-O2 9.00x*"));
    /* the best kernel's source, escaped, collapsed; user seed and user op marked */
    assert_non_null(strstr(page, "<details><summary>best kernel source: "));
    assert_non_null(strstr(page, "/* best of a: x &lt; y &amp;&amp; y &gt; z */"));
    assert_non_null(strstr(page, "/* the user&#39;s own silu */"));
    assert_non_null(strstr(page, "(proposer user) <b>user seed</b>"));
    assert_non_null(strstr(page, "<b>user seed</b> <b>user op</b>"));
    assert_non_null(strstr(page, "myop-u (user op)</h3>"));
    /* no LLM was used: no tokens chart, no tokens column */
    assert_null(strstr(page, "LLM tokens per task"));
    assert_null(strstr(page, "<th>tokens</th>"));
    /* native measurements but no native probe yet: no roofline */
    assert_null(strstr(page, "Roofline"));
    int n_trees;
    assert_true(check_geometry(page, &n_trees) >= 8);
    assert_int_equal(n_trees, 5);
    free(page);

    /* a native probe: the roofline shows gemv-c at 2 of min(10, 0.5 x 5)
     * GFLOP/s = 80%; an LLM trial: tokens appear */
    add_probe(&d);
    add_llm_trial(&d);
    page = report(db, tpath("r2.html"));
    assert_non_null(strstr(page, "Roofline: share of the attainable min(peak 10.0 GFLOP/s, AI x 5.0 GB/s)"));
    assert_non_null(strstr(page, ">gemv-c (AI 0.50 flop/B)</text>"));
    assert_non_null(strstr(page, ">80%</text>"));
    assert_non_null(strstr(page, "LLM tokens per task"));
    assert_non_null(strstr(page, "<th>tokens</th>"));
    assert_non_null(strstr(page, ">1500</text>"));
    check_geometry(page, &n_trees);
    free(page);
    graph_free(&d.g);
    store_close(d.st);
}

/* A store filled by a real `kope run --offline` (the k3 harness under qemu,
 * every figure emulated), not by rows written here: the ratios are the run's
 * own, SLEEF shows among an exp task's same-run ratios (its peer), nothing
 * came from an LLM (no tokens section), and with emulated outcomes only
 * there is no roofline, even once a native probe record exists. */
static void test_report_of_a_real_run(void **state)
{
    (void)state;
    char out[8192];
    const char *db = tpath("run.db"), *suite = tpath("one.json");
    FILE *f = fopen(suite, "w");
    assert_non_null(f);
    fputs("{\"suite\": \"one\", \"tasks\": [{\"name\": \"exp-small\", \"op\": \"exp\", "
          "\"dtype\": \"f32\", \"shape\": {\"n\": 1024}}]}\n", f);
    fclose(f);
    test_store_init(db);
    int rc = run_cmd(out, sizeof out, "%s --db %s run --offline --budget 1 --suite %s", kope_bin(), db, suite);
    if (rc != 0)
        fail_msg("kope run exited %d: %.3000s", rc, out);
    char *page = report(db, tpath("run.html"));
    assert_non_null(strstr(page, "exp-small"));
    assert_non_null(strstr(page, "sleef-m1"));
    assert_non_null(strstr(page, "sleef-m2"));
    assert_null(strstr(page, "LLM tokens per task"));
    assert_null(strstr(page, "<th>tokens</th>"));
    assert_null(strstr(page, "Roofline"));
    free(page);
    struct dev d;
    assert_int_equal(store_open(db, &d.st, out, sizeof out), 0);
    graph_init(&d.g, d.st);
    char key[600];
    snprintf(key, sizeof key, "%s.key", db);
    assert_int_equal(graph_identity_load(&d.g, key), 0);
    add_probe(&d);
    graph_free(&d.g);
    store_close(d.st);
    page = report(db, tpath("run2.html"));
    assert_null(strstr(page, "Roofline")); /* a native probe, but no native outcome */
    free(page);
}

/* Headless Chromium renders the page and takes a screenshot. */
static void test_report_renders_in_chromium(void **state)
{
    (void)state;
    char out[8192];
    if (run_cmd(out, sizeof out, "command -v chromium") != 0) {
        print_message("skip: chromium is not installed (Debian package 'chromium'), the page was "
                      "not rendered\n");
        skip();
    }
    struct dev d;
    const char *db = tpath("c.db");
    build(&d, db);
    graph_free(&d.g);
    store_close(d.st);
    char *page = report(db, tpath("c.html"));
    free(page);
    const char *png = tpath("c.png");
    unlink(png);
    int rc = run_cmd(out, sizeof out,
                     "HOME=%s timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                     "--disable-background-networking --disable-extensions --disable-sync "
                     "--hide-scrollbars --user-data-dir=%s --window-size=1280,2400 --screenshot=%s file://%s",
                     tpath("chrome-home"), tpath("chrome-profile"), png, tpath("c.html"));
    if (rc != 0)
        fail_msg("chromium exited %d: %.2000s", rc, out);
    FILE *f = fopen(png, "rb");
    assert_non_null(f);
    unsigned char hdr[24];
    assert_int_equal(fread(hdr, 1, sizeof hdr, f), sizeof hdr);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_memory_equal(hdr, "\x89PNG\r\n\x1a\n", 8);
    /* IHDR: width, height big-endian at bytes 16..23 */
    uint32_t w = (uint32_t)hdr[16] << 24 | (uint32_t)hdr[17] << 16 | (uint32_t)hdr[18] << 8 | hdr[19];
    assert_int_equal(w, 1280);
    assert_true(size > 20000); /* a blank page compresses to a few KB */
    print_message("chromium rendered the report: %s, %ld bytes\n", png, size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_content_and_geometry),
        cmocka_unit_test(test_report_of_a_real_run),
        cmocka_unit_test(test_report_renders_in_chromium),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

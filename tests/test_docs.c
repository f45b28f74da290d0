/*
 * tests/test_docs.c - every command example in README.md and docs/NAME.md runs.
 *
 * The docs are a newcomer's first hour: an example that fails as written is
 * a bug. This program reads README.md and every docs/NAME.md of the source tree
 * ($KOPE_SRC), takes each fenced ```sh block and runs its commands with
 * bash, in document order, against a scratch directory of its own per file
 * (README.md starts empty, as a new user does; a docs/ page starts after
 * `kope init`, which README tells the user to run first). `kope` on PATH is
 * the binary under test ($KOPE_BIN); HOME is the scratch directory; no
 * KOPE_* or LLM variable of the caller leaks in. A command that exits
 * non-zero fails the test, naming FILE:LINE, the command and its output.
 *
 * Markers (written in the docs, so the reader sees them too):
 *   cmd ...   # needs: WHAT ...   the command is skipped, and "skip: FILE:LINE
 *                                 needs WHAT" printed, where WHAT is one of
 *                                 needs_known[] below: hardware, a network
 *                                 peer, a hosted LLM, minutes of work (a
 *                                 build, a whole-suite run) the suite does
 *                                 elsewhere, or a record id of the writer's
 *                                 own store. An unknown WHAT is an error.
 *   a `# needs: WHAT` line before a block's first command skips the block.
 * Every fence must name its language (```sh, ```text, ```json, ```c ...):
 * a bare ``` fails here, so a command example cannot hide from this test.
 *
 * Files the examples name as the user's own are put in the scratch
 * directory first (fixtures() below): my_softmax.c is the shipped softmax
 * template, user-ops.json (with its folder user-ops/) the example suite of
 * user ops, other-fleet-ca.crt a second fleet's CA made by `kope fleet init`.
 *
 * A second check keeps the docs from citing what is not there: every
 * relative markdown link and every `path` in backticks under one of the
 * source folders must name a file or folder of the repository.
 *
 * Two facts the docs state are checked against the program itself: the
 * headers a candidate may include (every place that lists them names exactly
 * the screen's one list, k3_allowed_headers: the prompt as `kope context`
 * prints it, kernel_abi.h's comment, the knowledge file
 * and docs/K3-HARNESS.md), and docs/STORE.md's schema (its version, tables
 * and the absence of triggers, read from a store `kope init` made).
 */
#include "testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "platform/k3/k3.h"

#define DOC_MAX_BYTES (1 << 20)
#define OUT_CAP (1 << 20)
#define MAX_DOCS 64

/* Why an example may be skipped. Anything else is a typo in the docs. */
static const char *const needs_known[] = {
    "board",    /* a SpacemiT K3 (or another RVV board): ssh, scp, native times */
    "ascend",   /* an Ascend host with CANN */
    "llm",      /* an LLM endpoint (local server or hosted API) */
    "network",  /* another host, or a server that runs until stopped */
    "graphviz", /* Graphviz's `dot`, not part of kope's host packages */
    "minutes",  /* a build, the test suite or a whole-suite run: done elsewhere */
    "id",       /* a record id of the writer's store (every store's ids differ) */
};

static char out[OUT_CAP];

struct doc {
    char rel[256]; /* "README.md", "docs/AGENT.md" */
};

static struct doc docs[MAX_DOCS];
static size_t n_docs;

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: %s", path, strerror(errno));
    char *buf = malloc(DOC_MAX_BYTES + 1);
    assert_non_null(buf);
    size_t n = fread(buf, 1, DOC_MAX_BYTES + 1, f);
    fclose(f);
    if (n > DOC_MAX_BYTES)
        fail_msg("%s: larger than %d bytes", path, DOC_MAX_BYTES);
    buf[n] = '\0';
    return buf;
}

/* Split text into lines in place; returns the count. */
static size_t split_lines(char *text, char ***lines_out)
{
    size_t n = 1;
    for (char *p = text; *p; p++)
        n += *p == '\n';
    char **lines = calloc(n + 1, sizeof *lines);
    assert_non_null(lines);
    size_t k = 0;
    char *p = text;
    while (*p) {
        lines[k++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    *lines_out = lines;
    return k;
}

/* A fence line: up to 3 spaces, then 3+ backticks or tildes. Returns the
 * fence length (0: not a fence); *ch the character, *info the rest. */
static size_t fence(const char *line, char *ch, const char **info)
{
    const char *p = line;
    for (int i = 0; i < 3 && *p == ' '; i++)
        p++;
    if (*p != '`' && *p != '~')
        return 0;
    size_t n = 0;
    while (p[n] == *p)
        n++;
    if (n < 3)
        return 0;
    *ch = *p;
    *info = p + n;
    while (**info == ' ')
        (*info)++;
    return n;
}

/* "# needs: WHAT" in the line: WHAT copied to what (empty: no marker).
 * Returns -1 if WHAT is not a known reason. */
static int needs_marker(const char *line, char *what, size_t cap)
{
    what[0] = '\0';
    const char *m = strstr(line, "# needs:");
    if (!m)
        return 0;
    m += strlen("# needs:");
    while (*m == ' ')
        m++;
    size_t k = strcspn(m, " ,;()");
    snprintf(what, cap, "%.*s", (int)k, m);
    for (size_t i = 0; i < sizeof needs_known / sizeof needs_known[0]; i++)
        if (strcmp(what, needs_known[i]) == 0)
            return 1;
    return -1;
}

static int blank_or_comment(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return *line == '\0' || *line == '#';
}

/* A command continues on the next line after a trailing \, | or && / ||. */
static int continues(const char *line)
{
    size_t n = strlen(line);
    const char *hash = strstr(line, " #");
    if (hash)
        n = (size_t)(hash - line);
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (n == 0)
        return 0;
    if (line[n - 1] == '\\' || line[n - 1] == '|')
        return 1;
    return n >= 2 && line[n - 1] == '&' && line[n - 2] == '&';
}

/* ---- running one block ---------------------------------------------------
 * The block becomes one bash script (so `export` lines carry to the next
 * command, as they do for a reader typing them). After each command the
 * script prints a marker with its exit code and the document line it came
 * from; the output between markers is that command's. */

struct block_result {
    int failures;
};

static void print_tail(const char *text, size_t max)
{
    size_t n = strlen(text);
    const char *p = n > max ? text + n - max : text;
    for (const char *l = p; *l;) {
        const char *nl = strchr(l, '\n');
        int len = nl ? (int)(nl - l) : (int)strlen(l);
        print_message("      | %.*s\n", len, l);
        if (!nl)
            break;
        l = nl + 1;
    }
}

static int run_block(const char *rel, char **lines, size_t first, size_t last, const char *dir)
{
    char script[4200];
    snprintf(script, sizeof script, "%s/.docs-block.sh", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f, "set -o pipefail\nexec </dev/null 2>&1\n");
    int n_run = 0, failures = 0;
    size_t i = first;
    /* a `# needs:` comment before the first command skips the whole block */
    for (size_t j = first; j < last && blank_or_comment(lines[j]); j++) {
        char what[64];
        int m = needs_marker(lines[j], what, sizeof what);
        if (m < 0) {
            print_message("FAIL: %s:%zu: unknown `# needs: %s` (known: board, ascend, llm, "
                          "network, graphviz, minutes, id)\n", rel, j + 1, what);
            fclose(f);
            return 1;
        }
        if (m > 0) {
            print_message("skip: %s:%zu: block needs %s\n", rel, j + 1, what);
            fclose(f);
            return 0;
        }
    }
    while (i < last) {
        if (blank_or_comment(lines[i])) {
            i++;
            continue;
        }
        size_t end = i; /* the command is lines[i..end] */
        while (end + 1 < last && continues(lines[end]))
            end++;
        char what[64] = "";
        for (size_t j = i; j <= end; j++) {
            char w[64];
            int m = needs_marker(lines[j], w, sizeof w);
            if (m < 0) {
                print_message("FAIL: %s:%zu: unknown `# needs: %s` (known: board, ascend, "
                              "llm, network, graphviz, minutes, id)\n", rel, j + 1, w);
                failures++;
            }
            if (m > 0)
                snprintf(what, sizeof what, "%s", w);
        }
        if (what[0]) {
            print_message("skip: %s:%zu: needs %s: %s\n", rel, i + 1, what, lines[i]);
        } else {
            fprintf(f, "echo '@@docs-cmd %zu'\n", i + 1);
            for (size_t j = i; j <= end; j++)
                fprintf(f, "%s\n", lines[j]);
            fprintf(f, "echo \"@@docs-rc %zu $?\"\n", i + 1);
            n_run++;
        }
        i = end + 1;
    }
    fclose(f);
    if (failures || n_run == 0)
        return failures;
    /* PATH: the scratch bin (kope) first; the rest of the caller's PATH for
     * the tools the examples use (openssl, sed). */
    int rc = run_cmd(out, sizeof out,
                     "cd '%s' && env -u KOPE_DB -u KOPE_CONFIG -u KOPE_KEY "
                     "-u KOPE_LLM_BASE_URL -u KOPE_LLM_MODEL -u KOPE_LLM_API_KEY "
                     "-u KOPE_LLM_API_KEY_FILE -u KOPE_LLM_CA_FILE -u KOPE_LLM_PINNED_KEY "
                     /* nor the test harness's own make and runner settings */
                     "-u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u RUNNER -u KOPE_ARCH "
                     "HOME='%s' PATH='%s/bin':\"$PATH\" "
                     "timeout -k 5 %d bash --noprofile --norc .docs-block.sh",
                     /* 300 s: README's block measures a kernel and runs 4 trials under
                      * qemu, each verify at four VLENs (issue 21): 120 s was exceeded at
                      * load 16 on the shared 2-core machine */
                     dir, dir, dir, test_ms(300));
    /* walk the markers: each command's output sits between its two */
    const char *p = out;
    size_t line_no = 0;
    const char *cmd_out = NULL;
    int seen = 0;
    while (p && *p) {
        size_t l;
        int code;
        if (sscanf(p, "@@docs-cmd %zu", &l) == 1) {
            line_no = l;
            const char *nl = strchr(p, '\n');
            cmd_out = nl ? nl + 1 : p + strlen(p);
        } else if (sscanf(p, "@@docs-rc %zu %d", &l, &code) == 2) {
            seen++;
            if (code != 0) {
                print_message("FAIL: %s:%zu: exit %d: %s\n", rel, l, code, lines[l - 1]);
                char chunk[8192];
                int len = cmd_out ? (int)(p - cmd_out) : 0;
                snprintf(chunk, sizeof chunk, "%.*s", len, cmd_out ? cmd_out : "");
                print_tail(chunk, 3000);
                failures++;
            }
            cmd_out = NULL;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (seen != n_run) {
        /* the script stopped early: a syntax error, a timeout or an `exit` */
        print_message("FAIL: %s:%zu: block stopped after %d of %d command(s) (bash exit %d%s); "
                      "last command started at line %zu\n",
                      rel, first, seen, n_run, rc, rc == 124 ? ": timed out" : "", line_no);
        print_tail(out, 3000);
        failures++;
    }
    return failures;
}

/* ---- the scratch directory ---------------------------------------------- */

static void fixtures(const char *dir, int initialised)
{
    const char *src = test_src_root();
    assert_int_equal(run_cmd(out, sizeof out,
                             "rm -rf '%s' && mkdir -p '%s/bin' && ln -s '%s' '%s/bin/kope' && "
                             "cp '%s/platform/k3/embed/kernels/softmax.c' '%s/my_softmax.c' && "
                             "cp -r '%s/suites/user-ops.json' '%s/suites/user-ops' '%s/'",
                             dir, dir, kope_bin(), dir, src, dir, src, src, dir),
                     0);
    /* another fleet's CA, for `kope fleet trust other-fleet-ca.crt` */
    int rc = run_cmd(out, sizeof out,
                     "cd '%s' && mkdir other && kope() { '%s' \"$@\"; } && "
                     "kope --db other/o.db init && kope --db other/o.db fleet init --dir other/fleet && "
                     "cp other/fleet/ca.crt other-fleet-ca.crt && rm -rf other",
                     dir, kope_bin());
    if (rc != 0)
        fail_msg("making the fixture CA failed (%d): %s", rc, out);
    if (initialised) {
        rc = run_cmd(out, sizeof out, "cd '%s' && '%s' init", dir, kope_bin());
        if (rc != 0)
            fail_msg("kope init in %s failed (%d): %s", dir, rc, out);
    }
}

static void test_doc(void **state)
{
    const struct doc *d = *state;
    char path[4096], dir[4096];
    snprintf(path, sizeof path, "%s/%s", test_src_root(), d->rel);
    snprintf(dir, sizeof dir, "%s", tpath("docs-%s", d->rel + (strncmp(d->rel, "docs/", 5) ? 0 : 5)));
    fixtures(dir, strcmp(d->rel, "README.md") != 0);
    char *text = read_text(path);
    char **lines;
    size_t n = split_lines(text, &lines);
    int failures = 0, blocks = 0;
    for (size_t i = 0; i < n; i++) {
        char ch;
        const char *info;
        size_t flen = fence(lines[i], &ch, &info);
        if (!flen)
            continue;
        size_t open = i, close = i + 1;
        for (; close < n; close++) {
            char c2;
            const char *info2;
            size_t l2 = fence(lines[close], &c2, &info2);
            if (l2 >= flen && c2 == ch && *info2 == '\0')
                break;
        }
        if (close == n) {
            print_message("FAIL: %s:%zu: fenced block never closed\n", d->rel, open + 1);
            failures++;
            break;
        }
        char lang[32];
        snprintf(lang, sizeof lang, "%.*s", (int)strcspn(info, " {"), info);
        if (!lang[0]) {
            print_message("FAIL: %s:%zu: a fenced block without a language: use ```sh for "
                          "commands (run by tests/test_docs.c), ```text for output\n",
                          d->rel, open + 1);
            failures++;
        } else if (strcmp(lang, "sh") == 0) {
            blocks++;
            failures += run_block(d->rel, lines, open + 1, close, dir);
        }
        i = close;
    }
    print_message("%s: %d sh block(s)\n", d->rel, blocks);
    free(lines);
    free(text);
    if (failures)
        fail_msg("%s: %d example(s) failed (lines above)", d->rel, failures);
}

/* ---- citations ------------------------------------------------------------ */

/* target, or the program built from target.c (`bench/graph`). */
static int exists_in_tree(const char *rel_to, const char *target)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s%s", test_src_root(), rel_to, target);
    if (stat(path, &sb) == 0)
        return 1;
    snprintf(path, sizeof path, "%s/%s%s.c", test_src_root(), rel_to, target);
    return stat(path, &sb) == 0;
}

/* A token that names a source path: starts with a source folder, has no
 * wildcard or placeholder characters. Build outputs (build/...) are not
 * in the tree and are not checked. */
static int looks_like_repo_path(const char *t, size_t n)
{
    static const char *const roots[] = {"core/", "store/", "net/", "platform/", "suites/",
                                        "tests/", "bench/", "cross/", "docs/"};
    if (n == 0 || n > 200)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strchr("*<>{}[] $|,=:;'\"", t[i]))
            return 0;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (n > strlen(roots[i]) && strncmp(t, roots[i], strlen(roots[i])) == 0)
            return 1;
    return 0;
}

static void test_citations(void **state)
{
    (void)state;
    int bad = 0, checked = 0;
    for (size_t k = 0; k < n_docs; k++) {
        char path[4096], dir[256] = "";
        snprintf(path, sizeof path, "%s/%s", test_src_root(), docs[k].rel);
        const char *slash = strrchr(docs[k].rel, '/');
        if (slash)
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - docs[k].rel + 1), docs[k].rel);
        char *text = read_text(path);
        char **lines;
        size_t n = split_lines(text, &lines);
        for (size_t i = 0; i < n; i++) {
            const char *l = lines[i];
            /* relative markdown links: [text](target) */
            for (const char *p = strstr(l, "]("); p; p = strstr(p + 2, "](")) {
                const char *t = p + 2;
                size_t len = strcspn(t, ")# ");
                if (len == 0 || strncmp(t, "http", 4) == 0 || strncmp(t, "mailto:", 7) == 0)
                    continue;
                char target[512];
                snprintf(target, sizeof target, "%.*s", (int)len, t);
                checked++;
                if (!exists_in_tree(dir, target)) {
                    print_message("FAIL: %s:%zu: link to '%s', which is not in the repository\n",
                                  docs[k].rel, i + 1, target);
                    bad++;
                }
            }
            /* `paths` in backticks */
            for (const char *p = strchr(l, '`'); p; ) {
                const char *e = strchr(p + 1, '`');
                if (!e)
                    break;
                const char *t = p + 1;
                size_t len = (size_t)(e - t);
                /* a path followed by words (`tests/test_x.c case`) cites its first word */
                size_t word = strcspn(t, " `");
                if (word < len)
                    len = word;
                char target[512];
                snprintf(target, sizeof target, "%.*s", (int)len, t);
                /* `core/agent/agent.c/.h` style: check the first file */
                char *dup = strstr(target, "/.");
                if (dup)
                    *dup = '\0';
                if (looks_like_repo_path(target, strlen(target))) {
                    checked++;
                    if (!exists_in_tree("", target)) {
                        print_message("FAIL: %s:%zu: cites `%s`, which is not in the repository\n",
                                      docs[k].rel, i + 1, target);
                        bad++;
                    }
                }
                p = strchr(e + 1, '`');
            }
            /* the design notes live outside the repository: never cite them by name */
            if (strstr(l, "DESIGN.md") && !exists_in_tree("", "DESIGN.md")) {
                print_message("FAIL: %s:%zu: cites DESIGN.md, which is not in the repository\n",
                              docs[k].rel, i + 1);
                bad++;
            }
        }
        free(lines);
        free(text);
    }
    print_message("%d citation(s) checked\n", checked);
    assert_true(checked > 20); /* the check found the docs' references at all */
    if (bad)
        fail_msg("%d citation(s) of files not in the repository", bad);
}

/* ---- the allowed headers: one list, everywhere the same ------------------ */

/* The header names (NAME.h) in text between the first `start` and the next
 * `end` after it, as a space-separated list in got; 0, or -1 when start or
 * end is missing. */
static int headers_between(const char *text, const char *start, const char *end, char *got, size_t cap)
{
    const char *a = strstr(text, start);
    const char *b = a ? strstr(a + strlen(start), end) : NULL;
    got[0] = '\0';
    if (!b)
        return -1;
    size_t n = 0;
    for (const char *p = a + strlen(start); p + 1 < b; p++) {
        if (p[0] != '.' || p[1] != 'h' || (p + 2 < b && (isalnum((unsigned char)p[2]) || p[2] == '_')))
            continue;
        const char *w = p;
        while (w > a && (isalnum((unsigned char)w[-1]) || w[-1] == '_'))
            w--;
        if (w < p)
            n += (size_t)snprintf(got + n, n < cap ? cap - n : 0, "%s%.*s", n ? " " : "", (int)(p + 2 - w), w);
    }
    return 0;
}

/* got (space-separated) names exactly the headers of k3_allowed_headers. */
static int same_headers(const char *got, char *why, size_t cap)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", got);
    int seen[64] = {0}, n = 0;
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " ")) {
        int i = 0;
        while (i < K3_N_ALLOWED_HEADERS && strcmp(t, k3_allowed_headers[i]) != 0)
            i++;
        if (i == K3_N_ALLOWED_HEADERS) {
            snprintf(why, cap, "names %s, which the screen refuses", t);
            return 0;
        }
        seen[i] = 1;
        n++;
    }
    for (int i = 0; i < K3_N_ALLOWED_HEADERS; i++)
        if (!seen[i]) {
            snprintf(why, cap, "leaves out %s, which the screen allows", k3_allowed_headers[i]);
            return 0;
        }
    return n > 0;
}

static void test_allowed_headers(void **state)
{
    (void)state;
    /* where each text lists them: between these two strings */
    static const struct {
        const char *rel, *start, *end;
    } places[] = {
        {"platform/kernel_abi.h", "C file that includes only", "and defines"},
        {"docs/K3-HARNESS.md", "allow-list `", "`"},
        {"core/knowledge/x100-k3.md", "it may include only", "\n- "},
        /* the prompt contract is made from the list (platform/k3/prompt.c):
         * its text is checked as `kope context` prints it, below */
    };
    char path[4096], got[1024], why[256];
    int failures = 0;
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", test_src_root(), places[i].rel);
        char *text = read_text(path);
        if (headers_between(text, places[i].start, places[i].end, got, sizeof got)) {
            print_message("FAIL: %s: no header list after \"%s\" (moved? update test_docs.c)\n",
                          places[i].rel, places[i].start);
            failures++;
        } else if (!same_headers(got, why, sizeof why)) {
            print_message("FAIL: %s: its allowed headers (%s) %s (platform/k3/k3.h K3_ALLOWED_HEADERS)\n",
                          places[i].rel, got, why);
            failures++;
        }
        free(text);
    }
    /* the prompt as the program sends it */
    const char *dir = tpath("headers");
    int rc = run_cmd(out, sizeof out, "rm -rf '%s' && mkdir -p '%s' && cd '%s' && '%s' init >/dev/null && '%s' context silu-4864",
                     dir, dir, dir, kope_bin(), kope_bin());
    if (rc != 0)
        fail_msg("kope context exited %d: %s", rc, out);
    if (headers_between(out, "Allowed headers:", ". ", got, sizeof got)) {
        print_message("FAIL: `kope context silu-4864` prints no \"Allowed headers:\" sentence\n");
        failures++;
    } else if (!same_headers(got, why, sizeof why)) {
        print_message("FAIL: `kope context`'s prompt: its allowed headers (%s) %s\n", got, why);
        failures++;
    }
    if (failures)
        fail_msg("%d list(s) of allowed headers disagree with the screen", failures);
}

/* ---- docs/STORE.md against a store ---------------------------------------- */

static void test_store_doc(void **state)
{
    (void)state;
    const char *db = tpath("storedoc.db");
    test_store_init(db);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);

    char path[4096];
    snprintf(path, sizeof path, "%s/docs/STORE.md", test_src_root());
    char *text = read_text(path);
    const char *sec = strstr(text, "\n## Schema (version ");
    if (!sec)
        fail_msg("docs/STORE.md has no \"## Schema (version N)\" heading");
    int doc_version = atoi(sec + strlen("\n## Schema (version "));
    if (doc_version != version)
        fail_msg("docs/STORE.md says schema version %d; `kope init` makes version %d", doc_version, version);
    const char *sec_end = strstr(sec + 1, "\n## ");
    size_t sec_len = sec_end ? (size_t)(sec_end - sec) : strlen(sec);

    /* every table of the store has its row in the section, and every row
     * names a table of the store */
    int failures = 0, n_tables = 0;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT type, name FROM sqlite_master WHERE type IN "
                                           "('table', 'trigger') AND name NOT LIKE 'sqlite_%'",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        char row[160];
        snprintf(row, sizeof row, "\n| `%s(", name);
        if (strcmp(type, "trigger") == 0) {
            print_message("FAIL: the store has trigger %s; docs/STORE.md's schema names none\n", name);
            failures++;
        } else if (!memmem(sec, sec_len, row, strlen(row))) {
            print_message("FAIL: docs/STORE.md's schema table has no row for table %s\n", name);
            failures++;
        }
        n_tables++;
    }
    sqlite3_finalize(st);
    for (const char *r = strstr(sec, "\n| `"); r && r < sec + sec_len; r = strstr(r + 1, "\n| `")) {
        char name[64], sql[160];
        if (sscanf(r, "\n| `%63[a-z_](", name) != 1)
            continue;
        snprintf(sql, sizeof sql, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '%s'", name);
        assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) != SQLITE_ROW) {
            print_message("FAIL: docs/STORE.md's schema names table %s, which the store does not have\n", name);
            failures++;
        }
        sqlite3_finalize(st);
    }
    /* "kept by triggers" was the old story: the section must not tell it */
    if (memmem(sec, sec_len, "trigger", 7)) {
        print_message("FAIL: docs/STORE.md's schema section speaks of triggers; the store has none\n");
        failures++;
    }
    sqlite3_close(h);
    free(text);
    assert_true(n_tables >= 5);
    if (failures)
        fail_msg("docs/STORE.md disagrees with the store (lines above)");
}

/* The layering README.md's "Layout" states, checked on every include of
 * the tree: inside core, cli -> agent -> context -> {task, graph} -> the
 * base (the headers in core/ itself), never upwards or sideways; core names no target's folder
 * (platform/k3/, platform/ascend/: a target is reached through platform.h
 * only); and the lower three (store, net, platform) include nothing of each
 * other or of core. A new folder in core/ must be added here, with its rank. */
struct layer {
    const char *dir; /* relative to the source root */
    int rank;        /* core folders: may include a lower rank or itself */
};
static const struct layer core_layers[] = {
    {"core", 0}, {"core/graph", 1}, {"core/task", 1}, {"core/context", 2},
    {"core/agent", 3}, {"core/cli", 4},
};
static const char *const lower_three[] = {"store", "net", "platform", "platform/k3",
                                          "platform/ascend"};

/* The core layer of an include path "core/x/y.h" or "core/y.h"; -1 if none. */
static int core_layer_of(const char *inc, size_t n)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < sizeof core_layers / sizeof core_layers[0]; i++) {
        size_t l = strlen(core_layers[i].dir);
        if (n > l + 1 && strncmp(inc, core_layers[i].dir, l) == 0 && inc[l] == '/' &&
            !memchr(inc + l + 1, '/', n - l - 1) && l >= best_len) {
            best = (int)i;
            best_len = l;
        }
    }
    return best;
}

/* Checks one source file; returns the number of bad includes (printed). */
static int check_includes(const char *dir, int layer, int is_lower)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_src_root(), dir);
    DIR *dd = opendir(path);
    assert_non_null(dd);
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(dd))) {
        size_t l = strlen(e->d_name);
        if (l < 3 || e->d_name[l - 2] != '.' || (e->d_name[l - 1] != 'c' && e->d_name[l - 1] != 'h'))
            continue;
        char fp[4400];
        snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
        FILE *f = fopen(fp, "r");
        assert_non_null(f);
        char line[1024];
        int ln = 0;
        while (fgets(line, sizeof line, f)) {
            ln++;
            const char *p = line;
            while (*p == ' ' || *p == '\t')
                p++;
            /* core branches on no target's name: a target is reached through
             * platform_ops only (comments may name them) */
            if (!is_lower && *p != '*' && strncmp(p, "/*", 2) != 0 && strncmp(p, "//", 2) != 0 &&
                (strstr(p, "\"k3\"") || strstr(p, "\"ascend\""))) {
                print_message("FAIL: %s/%s:%d: a target's name in core code (use platform_ops)\n", dir,
                              e->d_name, ln);
                bad++;
            }
            if (strncmp(p, "#include \"", 10) != 0)
                continue;
            const char *inc = p + 10, *q = strchr(inc, '"');
            if (!q)
                continue;
            size_t n = (size_t)(q - inc);
            const char *why = NULL;
            if (is_lower) {
                if (n > 5 && strncmp(inc, "core/", 5) == 0)
                    why = "store, net and platform include nothing of core";
                else
                    for (size_t k = 0; k < 3; k++) {
                        size_t kl = strlen(lower_three[k]);
                        if (n > kl && strncmp(inc, lower_three[k], kl) == 0 && inc[kl] == '/' &&
                            strncmp(dir, lower_three[k], kl) != 0)
                            why = "store, net and platform never include each other";
                    }
            } else if ((n > 12 && strncmp(inc, "platform/k3/", 12) == 0) ||
                       (n > 16 && strncmp(inc, "platform/ascend/", 16) == 0)) {
                why = "core names no target folder (platform.h only)";
            } else if (n > 5 && strncmp(inc, "core/", 5) == 0) {
                int to = core_layer_of(inc, n);
                if (to < 0)
                    why = "not a core folder this test knows (add it to core_layers)";
                else if (to != layer && core_layers[to].rank >= core_layers[layer].rank)
                    why = "an include upwards or sideways in core's layers";
            }
            if (why) {
                print_message("FAIL: %s/%s:%d: #include \"%.*s\": %s\n", dir, e->d_name, ln,
                              (int)n, inc, why);
                bad++;
            }
        }
        fclose(f);
    }
    closedir(dd);
    return bad;
}

static void test_include_layers(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof core_layers / sizeof core_layers[0]; i++)
        bad += check_includes(core_layers[i].dir, (int)i, 0);
    for (size_t i = 0; i < sizeof lower_three / sizeof lower_three[0]; i++)
        bad += check_includes(lower_three[i], -1, 1);
    /* every folder in core/ is a known layer (or the knowledge files) */
    char path[4096];
    snprintf(path, sizeof path, "%s/core", test_src_root());
    DIR *dd = opendir(path);
    assert_non_null(dd);
    struct dirent *e;
    while ((e = readdir(dd))) {
        char fp[4400], rel[300];
        struct stat sb;
        snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
        if (e->d_name[0] == '.' || stat(fp, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
            strcmp(e->d_name, "knowledge") == 0)
            continue;
        snprintf(rel, sizeof rel, "core/%s/x.h", e->d_name);
        if (core_layer_of(rel, strlen(rel)) < 0) {
            print_message("FAIL: core/%s/: a folder the layering does not know (add it to "
                          "core_layers and README's Layout)\n", e->d_name);
            bad++;
        }
    }
    closedir(dd);
    if (bad)
        fail_msg("%d include(s) break the layering README.md's Layout states (lines above)", bad);
}

static int doc_cmp(const void *a, const void *b)
{
    return strcmp(((const struct doc *)a)->rel, ((const struct doc *)b)->rel);
}

int main(void)
{
    char dpath[4096];
    snprintf(docs[n_docs++].rel, sizeof docs[0].rel, "README.md");
    snprintf(dpath, sizeof dpath, "%s/docs", test_src_root());
    DIR *dd = opendir(dpath);
    if (!dd) {
        fprintf(stderr, "test_docs: cannot open %s: %s (set KOPE_SRC)\n", dpath, strerror(errno));
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(dd)) && n_docs < MAX_DOCS) {
        size_t l = strlen(e->d_name);
        if (l > 3 && strcmp(e->d_name + l - 3, ".md") == 0)
            snprintf(docs[n_docs++].rel, sizeof docs[0].rel, "docs/%s", e->d_name);
    }
    closedir(dd);
    qsort(docs + 1, n_docs - 1, sizeof docs[0], doc_cmp);

    struct CMUnitTest tests[MAX_DOCS + 4];
    size_t nt = 0;
    for (size_t k = 0; k < n_docs; k++) {
        tests[nt] = (struct CMUnitTest){docs[k].rel, test_doc, NULL, NULL, &docs[k]};
        nt++;
    }
    tests[nt++] = (struct CMUnitTest){"citations", test_citations, NULL, NULL, NULL};
    tests[nt++] = (struct CMUnitTest){"allowed_headers", test_allowed_headers, NULL, NULL, NULL};
    tests[nt++] = (struct CMUnitTest){"store_doc", test_store_doc, NULL, NULL, NULL};
    tests[nt++] = (struct CMUnitTest){"include_layers", test_include_layers, NULL, NULL, NULL};
    /* TEST_DOCS_ONLY=store_doc (a cmocka pattern, * allowed) runs those cases
     * alone while mending a page */
    if (getenv("TEST_DOCS_ONLY") && *getenv("TEST_DOCS_ONLY"))
        cmocka_set_test_filter(getenv("TEST_DOCS_ONLY"));
    return _cmocka_run_group_tests("docs", tests, nt, NULL, NULL);
}

/*
 * tests/test_interrupt.c - a store and a machine left ready after
 * interrupts and errors (issue 23):
 *  - SIGINT / SIGTERM at a random trial of a `kope run` (chosen from the
 *    run's own progress lines, not by a clock): exit 130 / 143, a line
 *    saying where the run stopped and the command that resumes it, no work
 *    folder left; the resumed run ends with exactly its budget, no trial
 *    twice, none without its outcome;
 *  - work folders of dead kope processes are removed by the next kope, by
 *    pid (live ones, held ones, other names and symlinks are left alone);
 *  - `kope init` on a full disk leaves no file; a run that meets a full
 *    disk says what to do and keeps the store whole (a small tmpfs in a
 *    user and mount namespace: a real ENOSPC);
 *  - a read-only copy of a store (a read-only bind mount) serves every
 *    read command.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <cJSON.h>

#include "core/graph/graph.h"
#include "core/util.h"
#include "store/store.h"

static const char *SUITE =
    "{\"suite\":\"intr\",\"tasks\":["
    "{\"name\":\"add-a\",\"op\":\"add\",\"dtype\":\"f32\",\"shape\":{\"n\":1000}},"
    "{\"name\":\"silu-a\",\"op\":\"silu\",\"dtype\":\"f32\",\"shape\":{\"n\":3000}}]}";

#define K kope_bin()

static const char *fresh_dir(const char *name)
{
    static char dir[4][4096];
    static int k;
    char *d = dir[k++ % 4], out[512], p[4200];
    snprintf(d, sizeof dir[0], "%s", tpath("%s", name));
    assert_int_equal(run_cmd(out, sizeof out, "rm -rf %s && mkdir -p %s/tmp", d, d), 0);
    snprintf(p, sizeof p, "%s/intr.json", d);
    test_write_text(p, SUITE);
    return d;
}

/* Entries of dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Decisions of every task of the suite in db: all, (run, trial) pairs
 * seen twice, and decisions without an outcome. */
static void run_counts(const char *db, int *n, int *dup, int *bare)
{
    struct store *st;
    struct graph g;
    char err[512];
    *n = *dup = *bare = 0;
    assert_int_equal(store_open_mode(db, STORE_READONLY, &st, err, sizeof err), 0);
    graph_init(&g, st);
    static const char *const tasks[] = {"add-a", "silu-a"};
    for (int k = 0; k < 2; k++) {
        uint8_t id[32];
        struct graph_tree t;
        if (graph_task_find(&g, tasks[k], id))
            continue;
        assert_int_equal(graph_tree_load(&g, id, &t), 0);
        for (size_t i = 0; i < t.n; i++) {
            const cJSON *bi = cJSON_GetObjectItemCaseSensitive(t.nodes[i].dec.json, "body");
            (*n)++;
            *bare += !t.nodes[i].has_outcome;
            for (size_t j = i + 1; j < t.n; j++) {
                const cJSON *bj = cJSON_GetObjectItemCaseSensitive(t.nodes[j].dec.json, "body");
                *dup += cJSON_Compare(cJSON_GetObjectItemCaseSensitive(bi, "run"),
                                      cJSON_GetObjectItemCaseSensitive(bj, "run"), 1) &&
                        cJSON_Compare(cJSON_GetObjectItemCaseSensitive(bi, "trial"),
                                      cJSON_GetObjectItemCaseSensitive(bj, "trial"), 1);
            }
        }
        graph_tree_free(&t);
    }
    assert_int_equal(store_integrity_check(st), 0);
    graph_free(&g);
    store_close(st);
}

/* `kope run` of the suite in dir with its stdout on a pipe; after the
 * after-th progress line, sig. Returns the exit code; its stderr is in
 * dir/err.log, its stdout in out. */
static int run_signalled(const char *dir, int budget, int after, int sig, char *out, size_t cap)
{
    int pfd[2];
    char db[4200], tmp[4200], err[4200], suite[4200], bud[16];
    snprintf(db, sizeof db, "%s/s.db", dir);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(err, sizeof err, "%s/err.log", dir);
    snprintf(suite, sizeof suite, "%s/intr.json", dir);
    snprintf(bud, sizeof bud, "%d", budget);
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        if (!freopen(err, "w", stderr))
            _exit(127);
        setenv("TMPDIR", tmp, 1);
        /* a test started as a background job inherits SIGINT ignored, and
         * kope keeps an ignored SIGINT ignored: this kope gets the default */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execl(K, K, "--db", db, "run", "--suite", suite, "--budget", bud, "--offline", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[4096];
    size_t used = 0;
    int seen = 0, sent = 0;
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (used + strlen(line) < cap) {
            memcpy(out + used, line, strlen(line) + 1);
            used += strlen(line);
        }
        if (strstr(line, " trial ") && ++seen == after && !sent) {
            kill(pid, sig);
            sent = 1;
        }
    }
    fclose(f);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!sent)
        return -1; /* the run ended before the point: the caller asked too late */
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
    char *t = NULL, err[256];
    size_t n;
    if (util_read_file(path, 1 << 24, &t, &n, err, sizeof err))
        return strdup("");
    return t;
}

/* ---------------------------------------------------------- signals */

/* SIGINT, then SIGTERM, each at a random trial of the 2 x budget; resumed
 * after each; the end state is that of an uninterrupted run. */
static void test_signal_then_resume(void **state)
{
    (void)state;
    const int budget = 3;
    char out[32768], cmd_out[32768], db[4200], tmp[4200];
    const char *d = fresh_dir("signals");
    snprintf(db, sizeof db, "%s/s.db", d);
    snprintf(tmp, sizeof tmp, "%s/tmp", d);
    assert_int_equal(run_cmd(out, sizeof out, "%s --db %s init", K, db), 0);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    const int sigs[2] = {SIGINT, SIGTERM};
    int progress = 0; /* trials recorded so far, over both tasks */
    for (int k = 0; k < 2; k++) {
        int left = 2 * budget - progress;
        if (left < 2)
            break;
        int after = 1 + rand() % (left - 1); /* before the last trial: the run is still going */
        print_message("%s after progress line %d of %d\n", k ? "SIGTERM" : "SIGINT", after, left);
        int rc = run_signalled(d, budget, after, sigs[k], out, sizeof out);
        char *err = slurp(tpath("signals/err.log"));
        if (rc != 128 + sigs[k])
            fail_msg("exit %d after %s (want %d):\n%s\n%s", rc, k ? "SIGTERM" : "SIGINT", 128 + sigs[k], out, err);
        if (!strstr(err, k ? "interrupted by SIGTERM: run " : "interrupted by SIGINT: run ") ||
            !strstr(err, " stopped in task ") || !strstr(err, "its work folders are removed") ||
            !strstr(err, "hint: resume it with the same command: kope --db "))
            fail_msg("no word of where the run stopped or how to resume:\n%s", err);
        free(err);
        assert_int_equal(count_prefixed(tmp, "kope-"), 0); /* no work folder left behind */
        int n, dup, bare;
        run_counts(db, &n, &dup, &bare);
        assert_int_equal(dup, 0);
        assert_int_equal(bare, 0);
        assert_true(n >= progress + after && n <= progress + after + 1); /* the trial in progress: finished or not recorded */
        progress = n;
    }
    int rc = run_cmd(cmd_out, sizeof cmd_out, "TMPDIR=%s %s --db %s run --suite %s/intr.json --budget %d --offline", tmp,
                     K, db, d, budget);
    if (rc)
        fail_msg("the resumed run: %s", cmd_out);
    assert_non_null(strstr(cmd_out, "(resumed)"));
    int n, dup, bare;
    run_counts(db, &n, &dup, &bare);
    assert_int_equal(n, 2 * budget);
    assert_int_equal(dup, 0);
    assert_int_equal(bare, 0);
    assert_int_equal(count_prefixed(tmp, "kope-"), 0);
}

/* ---------------------------------------------------------- work folders */

/* The next kope removes the work folders of dead kope processes: by the pid
 * in the name, confirmed by the free .owner lock. Kept: a live pid's, one
 * whose .owner is held (a live process elsewhere), an old-style name, and a
 * symlink (never followed). */
static void test_stale_workdirs_swept(void **state)
{
    (void)state;
    char out[8192], p[9000], tmp[4200];
    const char *d = fresh_dir("sweep");
    snprintf(tmp, sizeof tmp, "%s/tmp", d);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead); /* a pid no process has now */
    long live = (long)getppid();
    assert_int_equal(run_cmd(out, sizeof out,
                             "cd %s && mkdir -p kope-k3-%ld-Dead01/c1/rt kope-k3-%ld-Live01 kope-k3-%ld-Held01 "
                             "kope-k3-OldOne ../victim && touch kope-k3-%ld-Dead01/c1/rt/f ../victim/keep "
                             "kope-k3-%ld-Held01/.owner kope-ascend-%ld-Dead02 && ln -s ../victim kope-k3-%ld-Link01",
                             tmp, (long)dead, live, (long)dead, (long)dead, (long)dead, (long)dead, (long)dead), 0);
    snprintf(p, sizeof p, "%s/kope-k3-%ld-Held01/.owner", tmp, (long)dead);
    int held = open(p, O_RDONLY);
    assert_true(held >= 0);
    assert_int_equal(flock(held, LOCK_EX), 0);
    int rc = run_cmd(out, sizeof out, "cd %s && %s --db s.db init && TMPDIR=%s %s --db s.db probe", d, K, tmp, K);
    close(held);
    if (rc)
        fail_msg("kope probe: %s", out);
    struct stat sb;
    snprintf(p, sizeof p, "%s/kope-k3-%ld-Dead01", tmp, (long)dead);
    assert_int_not_equal(lstat(p, &sb), 0); /* removed */
    snprintf(p, sizeof p, "%s/kope-k3-%ld-Live01", tmp, live);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/kope-k3-%ld-Held01", tmp, (long)dead);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/kope-k3-OldOne", tmp);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/kope-k3-%ld-Link01", tmp, (long)dead);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/victim/keep", d);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/kope-ascend-%ld-Dead02", tmp, (long)dead);
    assert_int_equal(lstat(p, &sb), 0); /* a k3 platform sweeps k3 folders only */
    /* kope's own folders went with it; the five above are all that is left */
    assert_int_equal(count_prefixed(tmp, "kope-k3-"), 4);
}

/* ---------------------------------------------------------- full disk */

/* 1 when this machine lets an unprivileged user and mount namespace mount
 * a tmpfs (util-linux unshare): the disk-full and read-only cases use one. */
static int have_mount_ns(void)
{
    return run_cmd(NULL, 0, "unshare -Urm sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' >/dev/null 2>&1") == 0;
}

/* `kope init` on a full disk: exit 1, a hint naming the full disk, no file
 * left; on a disk with room afterwards it works. A run that fills the disk:
 * exit 1 with the hint, the store whole, and the same run finishes once
 * there is room. */
static void test_full_disk(void **state)
{
    (void)state;
    char out[32768];
    const char *d = fresh_dir("full");
    if (!have_mount_ns()) {
        print_message("skip: no user+mount namespace here: cannot mount a small tmpfs\n");
        skip();
    }
    /* 64 KiB: less than an empty store (the schema alone is 90 KiB) */
    int rc = run_cmd(out, sizeof out,
                     "cd %s && mkdir -p disk && unshare -Urm sh -c 'mount -t tmpfs -o size=64k tmpfs disk && "
                     "%s --db disk/k.db init; echo \"rc=$?\"; ls -A disk | wc -l'", d, K);
    (void)rc;
    if (!strstr(out, "rc=1") || !strstr(out, "hint: the disk holding disk/k.db is full") ||
        !strstr(out, "nothing was created") || !strstr(out, "\n0\n"))
        fail_msg("kope init on a full disk:\n%s", out);
    /* room for the store, then the disk fills during a run: a pad file
     * takes all but a few pages; removed, the run finishes */
    rc = run_cmd(out, sizeof out,
                 "cd %s && unshare -Urm sh -c 'mount -t tmpfs -o size=1m tmpfs disk && "
                 "%s --db disk/k.db init >/dev/null && dd if=/dev/zero of=disk/pad bs=4k 2>/dev/null; "
                 "rm -f disk/pad; dd if=/dev/zero of=disk/pad bs=4k count=$(( $(df -k --output=avail disk | tail -1) / 4 - 6 )) 2>/dev/null; "
                 "TMPDIR=%s/tmp %s --db disk/k.db run --suite intr.json --budget 2 --offline; echo \"rc=$?\"; "
                 "%s --db disk/k.db graph stats | grep -c ^records; rm -f disk/pad; "
                 "TMPDIR=%s/tmp %s --db disk/k.db run --suite intr.json --budget 2 --offline > run2.log 2>&1; echo \"rc2=$?\"; "
                 "cp disk/k.db k.db'",
                 d, K, d, K, K, d, K);
    if (!strstr(out, "rc=1") || !strstr(out, "disk full") || !strstr(out, "hint: the disk holding disk/k.db is full"))
        fail_msg("a run on a full disk:\n%s", out);
    if (!strstr(out, "rc2=0")) {
        char *log = slurp(tpath("full/run2.log"));
        fail_msg("the run with room again:\n%s\n%s", out, log);
    }
    int n, dup, bare;
    run_counts(tpath("full/k.db"), &n, &dup, &bare);
    assert_int_equal(n, 4);
    assert_int_equal(dup, 0);
    assert_int_equal(bare, 0);
}

/* ---------------------------------------------------------- read-only copy */

/* A copy of a store on a read-only mount serves every read command; a
 * writing one says the folder must be writable. */
static void test_read_only_copy(void **state)
{
    (void)state;
    char out[65536];
    const char *d = fresh_dir("rocopy");
    if (!have_mount_ns()) {
        print_message("skip: no user+mount namespace here: cannot make a read-only mount\n");
        skip();
    }
    int rc = run_cmd(out, sizeof out,
                     "cd %s && %s --db s.db init >/dev/null && TMPDIR=%s/tmp %s --db s.db run --suite intr.json "
                     "--budget 1 --offline >/dev/null && mkdir ro && cp s.db s.db.key ro/", d, K, d, K);
    if (rc)
        fail_msg("setup: %s", out);
    static const char *const reads[] = {
        "graph stats", "graph log add-a", "graph dot add-a", "graph vector", "graph export -o ../x.jsonl",
        "context add-a --suite ../intr.json", "report --html ../r.html", "queue list", "kernel show add-a",
        "kernels export -o ../lib --include-emulated",
    };
    char script[8192];
    size_t n = (size_t)snprintf(script, sizeof script,
                                "cd %s && unshare -Urm sh -c 'mount --bind ro ro && mount -o remount,bind,ro ro && cd ro", d);
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        n += (size_t)snprintf(script + n, sizeof script - n, " && { %s --db s.db %s >/dev/null 2>../e%zu.log || "
                              "{ echo \"FAILED: %s\"; cat ../e%zu.log; }; }", K, reads[i], i, reads[i], i);
    snprintf(script + n, sizeof script - n, "; TMPDIR=%s/tmp %s --db s.db run --suite ../intr.json --budget 1 "
             "--offline; echo \"run rc=$?\"; ls -A'", d, K);
    run_cmd(out, sizeof out, "%s", script);
    if (strstr(out, "FAILED: "))
        fail_msg("a read command failed on a read-only copy:\n%s", out);
    if (!strstr(out, "run rc=1") || !strstr(out, "must be writable"))
        fail_msg("a run on a read-only copy:\n%s", out);
    /* nothing was created beside the read-only store */
    assert_non_null(strstr(out, "s.db\ns.db.key\n"));
    assert_int_equal(access(tpath("rocopy/lib/kope_kernels.h"), R_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_workdirs_swept),
        cmocka_unit_test(test_read_only_copy),
        cmocka_unit_test(test_full_disk),
        cmocka_unit_test(test_signal_then_resume),
    };
    return cmocka_run_group_tests_name("interrupt", tests, NULL, NULL);
}

/*
 * platform/toolview.c - the read-only toolchain view of a sandboxed compile
 * (see toolview.h for what goes in and why). Paths are resolved by hand,
 * one component at a time, so every symlink met on the way is recorded at
 * its own (canonical) place: bound into an empty root, /usr/bin/clang-19 ->
 * ../lib/llvm-19/bin/clang and /lib64 -> usr/lib64 must still lead where
 * they lead on the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "platform/toolview.h"

#define TV_HOPS_MAX 32        /* symlinks followed for one path */
#define TV_PROBE_OUT (64u << 10)

void toolview_init(struct toolview *v)
{
    v->n = 0;
    v->overflow = 0;
}

/* Is path already visible: an entry itself, or under a directory entry? */
static int covered(const struct toolview *v, const char *path, int is_link)
{
    size_t pl = strlen(path);
    for (int i = 0; i < v->n; i++) {
        size_t l = strlen(v->path[i]);
        if (l == pl && memcmp(v->path[i], path, l) == 0 && v->is_link[i] == is_link)
            return 1;
        if (!v->is_link[i] && l < pl && memcmp(v->path[i], path, l) == 0 &&
            (path[l] == '/' || (l == 1 && path[0] == '/')))
            return 1; /* under a bound directory: the host's own tree shows it */
    }
    return 0;
}

static int push(struct toolview *v, const char *path, int is_link)
{
    if (covered(v, path, is_link))
        return 0;
    if (v->n >= TOOLVIEW_MAX || strlen(path) >= TOOLVIEW_PATH_MAX) {
        v->overflow = 1;
        return -1;
    }
    snprintf(v->path[v->n], TOOLVIEW_PATH_MAX, "%s", path);
    v->is_link[v->n++] = (unsigned char)is_link;
    /* a directory makes entries under it redundant */
    if (!is_link) {
        size_t l = strlen(path);
        int w = 0;
        for (int i = 0; i < v->n; i++) {
            int under = i != v->n - 1 && strlen(v->path[i]) > l && memcmp(v->path[i], path, l) == 0 &&
                        v->path[i][l] == '/';
            if (under)
                continue;
            if (w != i) {
                memcpy(v->path[w], v->path[i], TOOLVIEW_PATH_MAX);
                v->is_link[w] = v->is_link[i];
            }
            w++;
        }
        v->n = w;
    }
    return 0;
}

/* Resolve path one component at a time (".", "..", symlinks), recording
 * every symlink met; the canonical result goes into out (may be NULL).
 * 0, or -1 when a component does not exist or there are too many hops. */
static int resolve(struct toolview *v, const char *path, char *out, size_t out_len, int record)
{
    char todo[2 * TOOLVIEW_PATH_MAX], done[TOOLVIEW_PATH_MAX] = "";
    if (path[0] != '/' || strlen(path) >= sizeof todo)
        return -1;
    snprintf(todo, sizeof todo, "%s", path);
    int hops = 0;
    size_t at = 0;
    while (todo[at]) {
        while (todo[at] == '/')
            at++;
        if (!todo[at])
            break;
        size_t cl = strcspn(todo + at, "/");
        char comp[256];
        if (cl >= sizeof comp)
            return -1;
        memcpy(comp, todo + at, cl);
        comp[cl] = '\0';
        at += cl;
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            char *s = strrchr(done, '/');
            if (s)
                *s = '\0';
            continue;
        }
        char cand[TOOLVIEW_PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%s/%s", done, comp) >= sizeof cand)
            return -1;
        struct stat st;
        if (lstat(cand, &st) != 0)
            return -1;
        if (!S_ISLNK(st.st_mode)) {
            memcpy(done, cand, sizeof done);
            continue;
        }
        if (++hops > TV_HOPS_MAX)
            return -1;
        if (record)
            push(v, cand, 1);
        char target[TOOLVIEW_PATH_MAX], rest[2 * TOOLVIEW_PATH_MAX];
        ssize_t tl = readlink(cand, target, sizeof target - 1);
        if (tl <= 0)
            return -1;
        target[tl] = '\0';
        snprintf(rest, sizeof rest, "%s", todo + at);
        if (target[0] == '/')
            done[0] = '\0';
        if ((size_t)snprintf(todo, sizeof todo, "%s%s", target, rest) >= sizeof todo)
            return -1;
        at = 0;
    }
    if (!done[0])
        snprintf(done, sizeof done, "/");
    if (out)
        snprintf(out, out_len, "%s", done);
    return 0;
}

int toolview_add(struct toolview *v, const char *path)
{
    char real[TOOLVIEW_PATH_MAX];
    if (resolve(v, path, real, sizeof real, 1) != 0)
        return -1;
    return push(v, real, 0);
}

/* The directory part of a canonical path. */
static void dir_of(const char *path, char *out, size_t out_len)
{
    snprintf(out, out_len, "%s", path);
    char *s = strrchr(out, '/');
    if (s && s != out)
        *s = '\0';
    else if (s)
        s[1] = '\0';
}

/* Add path's symlinks and the directory holding its canonical target. */
static int add_dir_of(struct toolview *v, const char *path)
{
    char real[TOOLVIEW_PATH_MAX], dir[TOOLVIEW_PATH_MAX];
    if (resolve(v, path, real, sizeof real, 1) != 0)
        return -1;
    dir_of(real, dir, sizeof dir);
    return push(v, dir, 0);
}

/* The program interpreter of an ELF64 little-endian executable (*script
 * 0), or of a "#!" script (*script 1); "" when it has none (static). 0, or
 * -1 when unreadable. */
static int interp_of(const char *exe, char *out, size_t out_len, int *script)
{
    out[0] = '\0';
    *script = 0;
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    unsigned char h[64];
    ssize_t n = pread(fd, h, sizeof h, 0);
    int rc = 0;
    if (n >= 2 && h[0] == '#' && h[1] == '!') {
        char line[256];
        ssize_t m = pread(fd, line, sizeof line - 1, 2);
        line[m > 0 ? m : 0] = '\0';
        char *s = line + strspn(line, " \t");
        s[strcspn(s, " \t\r\n")] = '\0';
        snprintf(out, out_len, "%s", s);
        *script = 1;
    } else if (n == 64 && memcmp(h, "\177ELF", 4) == 0 && h[4] == 2 && h[5] == 1) {
        uint64_t phoff;
        uint16_t phentsize, phnum;
        memcpy(&phoff, h + 32, 8);
        memcpy(&phentsize, h + 54, 2);
        memcpy(&phnum, h + 56, 2);
        for (unsigned i = 0; i < phnum && i < 64 && phentsize >= 56; i++) {
            unsigned char ph[56];
            if (pread(fd, ph, sizeof ph, (off_t)(phoff + (uint64_t)i * phentsize)) != (ssize_t)sizeof ph)
                break;
            uint32_t type;
            uint64_t off, sz;
            memcpy(&type, ph, 4);
            memcpy(&off, ph + 8, 8);
            memcpy(&sz, ph + 32, 8);
            if (type == 3 /* PT_INTERP */ && sz > 1 && sz < out_len) {
                if (pread(fd, out, (size_t)sz, (off_t)off) != (ssize_t)sz)
                    rc = -1;
                out[sz - 1] = '\0';
                break;
            }
        }
    }
    close(fd);
    return rc;
}

/* Run argv (kope's own probe of the toolchain), output into out. 0 when it
 * exited 0. */
static int probe(char *const *argv, char *out, size_t out_len)
{
    struct proc_spec r = {.argv = argv, .timeout_ms = 60000, .cpu_s = 61,
                          .output_cap = TV_PROBE_OUT, .out = out, .out_len = out_len};
    struct proc_result res;
    char err[256];
    if (proc_run(&r, &res, err, sizeof err) != 0)
        return -1;
    return res.exited && res.exit_code == 0 && !res.timed_out && !res.flooded ? 0 : -1;
}

/* Look a bare name up in the sandbox's PATH (/usr/bin:/bin). */
static int path_lookup(const char *name, char *out, size_t out_len)
{
    static const char *const dirs[] = {"/usr/bin", "/bin"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, out_len, "%s/%s", dirs[i], name);
        if (access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

int toolview_add_exe(struct toolview *v, const char *exe)
{
    char path[TOOLVIEW_PATH_MAX], real[TOOLVIEW_PATH_MAX], interp[TOOLVIEW_PATH_MAX];
    if (strchr(exe, '/'))
        snprintf(path, sizeof path, "%s", exe);
    else if (path_lookup(exe, path, sizeof path) != 0)
        return -1;
    if (path[0] != '/') { /* relative to kope's working directory */
        char *abs = realpath(path, NULL);
        if (!abs)
            return -1;
        snprintf(path, sizeof path, "%s", abs);
        free(abs);
    }
    if (resolve(v, path, real, sizeof real, 1) != 0 || push(v, real, 0) != 0)
        return -1;
    int script = 0;
    if (interp_of(real, interp, sizeof interp, &script) != 0 || !interp[0])
        return 0; /* static, or not for us to read: the compile check says */
    if (script) /* "#!/bin/sh": the shell and its libraries */
        return interp[0] == '/' ? toolview_add_exe(v, interp) : -1;
    if (add_dir_of(v, interp) != 0)
        return -1;
    /* the dynamic loader lists what it would load ("name => /path (0x..)",
     * "/path (0x..)"); it maps the libraries but runs no code of them */
    char *out = malloc(TV_PROBE_OUT);
    if (!out)
        return -1;
    char *argv[] = {interp, "--list", real, NULL};
    int rc = 0;
    if (probe(argv, out, TV_PROBE_OUT) == 0) {
        for (char *l = out; *l;) {
            char *e = strchr(l, '\n');
            if (e)
                *e = '\0';
            char *arrow = strstr(l, "=> ");
            char *p = arrow ? arrow + 3 : l + strspn(l, " \t");
            if (*p == '/') {
                p[strcspn(p, " \t(")] = '\0';
                add_dir_of(v, p);
            }
            l = e ? e + 1 : l + strlen(l);
        }
    } else {
        /* a loader without --list: the directories it searches by default */
        static const char *const dflt[] = {"/lib", "/lib64", "/usr/lib", "/usr/lib64"};
        for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
            toolview_add(v, dflt[i]);
    }
    free(out);
    return rc;
}

/* argv of the compiler command and its flags, then the probe's words. */
struct tv_argv {
    char *argv[48];
    int argc;
    char buf[2][1024];
};

static int tv_argv_make(struct tv_argv *a, const char *cc, const char *cflags)
{
    a->argc = 0;
    if (proc_argv_split(cc, a->buf[0], sizeof a->buf[0], a->argv, &a->argc, 40) != 0 ||
        (cflags && *cflags &&
         proc_argv_split(cflags, a->buf[1], sizeof a->buf[1], a->argv, &a->argc, 40) != 0) ||
        a->argc == 0)
        return -1;
    return 0;
}

static void tv_argv_push(struct tv_argv *a, int base, char *w0, char *w1, char *w2, char *w3)
{
    char *w[4] = {w0, w1, w2, w3};
    a->argc = base;
    for (int i = 0; i < 4 && w[i]; i++)
        a->argv[a->argc++] = w[i];
    a->argv[a->argc] = NULL;
}

/* Every ':'-separated directory after "key" in the line that starts with it. */
static void add_dirs_after(struct toolview *v, const char *text, const char *key)
{
    const char *l = strstr(text, key);
    while (l && l != text && l[-1] != '\n')
        l = strstr(l + 1, key);
    if (!l)
        return;
    l += strlen(key);
    if (*l == '=')
        l++;
    while (*l && *l != '\n') {
        size_t n = strcspn(l, ":\n");
        char dir[TOOLVIEW_PATH_MAX];
        if (n > 0 && n < sizeof dir && l[0] == '/') {
            memcpy(dir, l, n);
            dir[n] = '\0';
            toolview_add(v, dir); /* missing ones are skipped: compilers list guesses */
        }
        l += n;
        if (*l == ':')
            l++;
    }
}

int toolview_add_cc(struct toolview *v, const char *cc, const char *cflags, char *err, size_t err_len)
{
    struct tv_argv a;
    if (tv_argv_make(&a, cc, cflags) != 0) {
        snprintf(err, err_len, "compiler command '%.200s' does not split into words", cc);
        return PLAT_ERR_NO_TOOLCHAIN;
    }
    int base = a.argc;
    char *out = malloc(TV_PROBE_OUT);
    if (!out) {
        snprintf(err, err_len, "out of memory");
        return PLAT_ERR_NOMEM;
    }
    int rc = PLAT_ERR_NO_TOOLCHAIN;
    if (toolview_add_exe(v, a.argv[0]) != 0) {
        snprintf(err, err_len, "compiler '%.200s' not found", a.argv[0]);
        goto out;
    }
    /* program and library search directories (gcc and clang alike) */
    tv_argv_push(&a, base, "-print-search-dirs", NULL, NULL, NULL);
    if (probe(a.argv, out, TV_PROBE_OUT) != 0) {
        snprintf(err, err_len, "'%.200s -print-search-dirs' failed: %.200s", cc, out);
        goto out;
    }
    add_dirs_after(v, out, "install: ");
    add_dirs_after(v, out, "programs: ");
    add_dirs_after(v, out, "libraries: ");
    /* clang's resource dir (its own headers and runtime); gcc's sysroot */
    static char *const single[] = {"-print-resource-dir", "-print-sysroot"};
    for (size_t i = 0; i < 2; i++) {
        tv_argv_push(&a, base, single[i], NULL, NULL, NULL);
        if (probe(a.argv, out, TV_PROBE_OUT) == 0 && out[0] == '/') {
            out[strcspn(out, "\r\n")] = '\0';
            toolview_add(v, out);
        }
    }
    /* the programs the driver runs, with their libraries */
    static const char *const progs[] = {"cc1", "as", "ld", "ld.lld", "collect2", "lto-wrapper"};
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        char opt[64];
        snprintf(opt, sizeof opt, "-print-prog-name=%s", progs[i]);
        tv_argv_push(&a, base, opt, NULL, NULL, NULL);
        if (probe(a.argv, out, TV_PROBE_OUT) != 0)
            continue;
        out[strcspn(out, "\r\n")] = '\0';
        if (out[0])
            toolview_add_exe(v, out); /* a bare name: the sandbox's PATH; absent: skipped */
    }
    /* the include search list with the candidate's flags */
    tv_argv_push(&a, base, "-E", "-v", "-xc", "/dev/null");
    if (probe(a.argv, out, TV_PROBE_OUT) != 0) {
        snprintf(err, err_len, "'%.200s -E -v' failed: %.200s", cc, out);
        goto out;
    }
    int in_list = 0;
    for (char *l = out; *l;) {
        char *e = strchr(l, '\n');
        if (e)
            *e = '\0';
        if (strstr(l, "search starts here:"))
            in_list = 1;
        else if (strncmp(l, "End of search list.", 19) == 0)
            in_list = 0;
        else if (in_list && l[0] == ' ' && l[1] == '/') {
            char *p = l + 1;
            p[strcspn(p, " \t")] = '\0'; /* " (framework directory)" */
            toolview_add(v, p);
        }
        l = e ? e + 1 : l + strlen(l);
    }
    toolview_add(v, "/etc/ld.so.cache");
    if (v->overflow) {
        snprintf(err, err_len, "the compiler's view needs over %d paths", TOOLVIEW_MAX);
        goto out;
    }
    rc = 0;
out:
    free(out);
    return rc;
}

int toolview_list(const struct toolview *v, const char *const *extra, const char **list, int cap)
{
    int n = 0;
    for (int i = 0; i < v->n; i++) {
        if (n + 1 >= cap)
            return -1;
        list[n++] = v->path[i];
    }
    for (int i = 0; extra && extra[i]; i++) {
        if (n + 1 >= cap)
            return -1;
        list[n++] = extra[i];
    }
    list[n] = NULL;
    return n;
}

void toolview_print(const struct toolview *v, char *out, size_t out_len)
{
    size_t n = 0;
    if (out_len)
        out[0] = '\0';
    for (int i = 0; i < v->n && n + 1 < out_len; i++) {
        int w = snprintf(out + n, out_len - n, "%s%s", n ? " " : "", v->path[i]);
        if (w < 0 || (size_t)w >= out_len - n)
            break;
        n += (size_t)w;
    }
}

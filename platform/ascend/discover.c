/*
 * platform/ascend/discover.c - where CANN is and what it can do on this host.
 *
 * Order, first hit wins: the setting (config platform.ascend.home), then
 * $ASCEND_HOME_PATH and $ASCEND_TOOLKIT_HOME (what CANN's set_env.sh
 * exports), then the documented default install paths:
 * /usr/local/Ascend/ascend-toolkit/latest (up to CANN 8.3), then
 * /usr/local/Ascend/cann and the newest /usr/local/Ascend/cann-<version>
 * (CANN 8.5 on), then the same under $HOME/Ascend for user installs.
 * Inside the toolkit:
 *   compiler/tikcpp/ascendc_kernel_cmake/ascendc.cmake  (older: tools/tikcpp/...)
 *   compiler/ccec_compiler/bin/bisheng                  the Ascend C compiler
 *   tools/profiler/bin/msprof (or bin/msprof)           `msprof op`
 *   <arch>-linux/data/platform_config/<SoC>.ini         core counts, buffer sizes
 *   <arch>-linux/ascend_toolkit_install.info            version=...
 * The NPU comes from `npu-smi info` (the driver's tool, on PATH or in
 * /usr/local/sbin or /usr/local/bin); the SoC version is "Ascend" + its Name
 * column unless the setting names one. Nothing here fails: every absent piece
 * is named in tk->missing so `kope probe` can say exactly what is missing.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/ascend/ascend.h"

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void str_copy(char *d, size_t n, const char *s)
{
    size_t l = strlen(s);
    if (l >= n)
        l = n - 1;
    memcpy(d, s, l);
    d[l] = '\0';
}

static void missing_add(struct asc_toolkit *tk, const char *fmt, const char *a)
    __attribute__((format(printf, 2, 0)));
static void missing_add(struct asc_toolkit *tk, const char *fmt, const char *a)
{
    char one[600];
    size_t l = strlen(tk->missing);
    if (l + 3 >= sizeof tk->missing)
        return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(one, sizeof one, fmt, a ? a : "");
#pragma GCC diagnostic pop
    if (l) {
        tk->missing[l++] = ';';
        tk->missing[l++] = ' ';
    }
    str_copy(tk->missing + l, sizeof tk->missing - l, one);
}

/* First candidate path that exists (as a file if want_file) into out. */
static int first_of(char *out, size_t out_len, const char *base, const char *const *rel, int want_file)
{
    char p[ASC_PATH_MAX + 128];
    for (; *rel; rel++) {
        snprintf(p, sizeof p, "%.500s/%s", base, *rel);
        if (want_file ? is_file(p) : is_dir(p)) {
            str_copy(out, out_len, p);
            return 1;
        }
    }
    out[0] = '\0';
    return 0;
}

/* An executable named name in PATH, into out. */
static int path_find(const char *name, char *out, size_t out_len)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char dir[ASC_PATH_MAX + 64];
    while (*path) {
        size_t dl = strcspn(path, ":");
        if (dl && dl < ASC_PATH_MAX) {
            snprintf(dir, sizeof dir, "%.*s/%s", (int)dl, path, name);
            if (access(dir, X_OK) == 0 && is_file(dir)) {
                str_copy(out, out_len, dir);
                return 1;
            }
        }
        path += dl;
        if (*path == ':')
            path++;
    }
    return 0;
}

static char *read_small(const char *path, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t n = fread(buf, 1, cap, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* `key=value` (or `key: value`) on its own line, value trimmed into out. */
static int kv_find(const char *text, const char *key, char *out, size_t out_len)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        while (*l == ' ' || *l == '\t')
            l++;
        if (strncasecmp(l, key, kl) != 0)
            continue;
        const char *v = l + kl;
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v != '=' && *v != ':')
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t n = strcspn(v, "\r\n#");
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        if (n >= out_len)
            n = out_len - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ npu-smi --- */

/*
 * `npu-smi info` prints a boxed table, two lines per chip:
 *   | npu-smi 23.0.rc3                 Version: 23.0.rc3                  |
 *   | NPU   Name                | Health        | Power(W)    Temp(C) ... |
 *   | Chip                      | Bus-Id        | AICore(%)   Memory-...  |
 *   +===========================+===============+=======================+
 *   | 0     910B3               | OK            | 95.0        35    ... |
 *   | 0                         | 0000:C1:00.0  | 0           0    / 0  |
 * A chip line is the first of a pair: "| <int> <Name> | <Health> |".
 */
int asc_npu_smi_parse(const char *text, struct asc_toolkit *tk)
{
    int n = 0, past_header = 0;
    tk->n_npus = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char line[512];
        size_t ll = strcspn(l, "\n");
        if (ll >= sizeof line)
            ll = sizeof line - 1;
        memcpy(line, l, ll);
        line[ll] = '\0';
        const char *v = strstr(line, "Version:");
        if (v && !tk->smi_version[0]) {
            char ver[64] = "";
            if (sscanf(v + 8, " %63s", ver) == 1)
                snprintf(tk->smi_version, sizeof tk->smi_version, "%s", ver);
        }
        if (strncmp(line, "+=", 2) == 0) {
            past_header = 1;
            continue;
        }
        if (strncmp(line, "+-", 2) == 0)
            continue;
        if (!past_header || line[0] != '|')
            continue;
        /* first field: "<int> <Name>"; the second line of a pair has only
         * the chip number, and its second field is a Bus-Id (has ':') */
        char f1[128] = "", f2[128] = "";
        const char *p = line + 1;
        size_t a = strcspn(p, "|");
        snprintf(f1, sizeof f1, "%.*s", (int)(a < 127 ? a : 127), p);
        if (p[a] == '|') {
            const char *q = p + a + 1;
            size_t b = strcspn(q, "|");
            snprintf(f2, sizeof f2, "%.*s", (int)(b < 127 ? b : 127), q);
        }
        int id;
        char name[64] = "", health[32] = "";
        if (sscanf(f1, "%d %63s", &id, name) != 2 || strspn(name, "0123456789") == strlen(name))
            continue; /* the pair's second line: chip and Phy-Id numbers only */
        if (sscanf(f2, "%31s", health) != 1 || strchr(health, ':'))
            continue;
        n++;
        if (n == 1) {
            snprintf(tk->npu_name, sizeof tk->npu_name, "%s", name);
            snprintf(tk->npu_health, sizeof tk->npu_health, "%s", health);
        }
    }
    tk->n_npus = n;
    tk->npu_found = n > 0;
    return n;
}

static void npu_query(struct asc_toolkit *tk, const char *smi_setting)
{
    if (smi_setting && *smi_setting) {
        if (access(smi_setting, X_OK) == 0)
            snprintf(tk->npu_smi, sizeof tk->npu_smi, "%.500s", smi_setting);
    } else if (!path_find("npu-smi", tk->npu_smi, sizeof tk->npu_smi)) {
        static const char *const def[] = {"/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi", NULL};
        for (const char *const *d = def; *d; d++)
            if (access(*d, X_OK) == 0) {
                snprintf(tk->npu_smi, sizeof tk->npu_smi, "%s", *d);
                break;
            }
    }
    if (!tk->npu_smi[0]) {
        missing_add(tk, "npu-smi not found (PATH, /usr/local/sbin, /usr/local/bin): no Ascend driver, so no NPU%s", "");
        return;
    }
    char out[16384], err[256];
    char *argv[] = {tk->npu_smi, "info", NULL};
    struct proc_spec r = {.argv = argv, .timeout_ms = 20000, .output_cap = 1 << 20,
                        .out = out, .out_len = sizeof out};
    struct proc_result res;
    if (proc_run(&r, &res, err, sizeof err) != 0 || res.timed_out) {
        missing_add(tk, "npu-smi did not answer (%s)", res.timed_out ? "timed out" : err);
        return;
    }
    if (!res.exited || res.exit_code != 0 || asc_npu_smi_parse(out, tk) == 0) {
        char first[160];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(out, "\n"), out);
        missing_add(tk, "npu-smi info lists no NPU chip (%s)", first[0] ? first : "no output");
    }
}

/* ----------------------------------------------------------------- ini --- */

static uint64_t ini_u64(const char *text, const char *key)
{
    char v[64];
    return kv_find(text, key, v, sizeof v) ? strtoull(v, NULL, 10) : 0;
}

int asc_soc_ini_parse(const char *text, struct asc_toolkit *tk)
{
    tk->ai_cores = (int)ini_u64(text, "ai_core_cnt");
    tk->cube_cores = (int)ini_u64(text, "cube_core_cnt");
    tk->vector_cores = (int)ini_u64(text, "vector_core_cnt");
    tk->l2_bytes = ini_u64(text, "l2_size");
    tk->hbm_bytes = ini_u64(text, "memory_size");
    tk->ub_bytes = ini_u64(text, "ub_size");
    tk->l1_bytes = ini_u64(text, "l1_size");
    tk->l0a_bytes = ini_u64(text, "l0_a_size");
    tk->l0b_bytes = ini_u64(text, "l0_b_size");
    tk->l0c_bytes = ini_u64(text, "l0_c_size");
    tk->cube_freq_mhz = (int)ini_u64(text, "cube_freq");
    return tk->ai_cores > 0 ? 0 : -1;
}

/* ------------------------------------------------------------ toolkit --- */

/* The newest /usr/local/Ascend/cann-<version> (CANN 8.5+ layout), into out. */
static int newest_versioned(const char *parent, char *out, size_t out_len)
{
    struct dirent **list = NULL;
    int n = scandir(parent, &list, NULL, alphasort), found = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (!found && strncmp(list[i]->d_name, "cann-", 5) == 0) {
            snprintf(out, out_len, "%.300s/%.100s", parent, list[i]->d_name);
            found = is_dir(out);
        }
        free(list[i]);
    }
    free(list);
    return found;
}

static int home_pick(struct asc_toolkit *tk, const char *home_setting)
{
    struct home_cand { const char *path, *from; } cand[8];
    int n = 0, n_explicit;
    char user_home[ASC_PATH_MAX], user_cann[ASC_PATH_MAX], versioned[ASC_PATH_MAX];
    if (home_setting && *home_setting)
        cand[n++] = (struct home_cand){home_setting, "setting platform.ascend.home"};
    const char *e1 = getenv("ASCEND_HOME_PATH"), *e2 = getenv("ASCEND_TOOLKIT_HOME");
    if (e1 && *e1)
        cand[n++] = (struct home_cand){e1, "ASCEND_HOME_PATH"};
    if (e2 && *e2)
        cand[n++] = (struct home_cand){e2, "ASCEND_TOOLKIT_HOME"};
    n_explicit = n;
    /* documented install locations: ascend-toolkit/latest (up to CANN 8.3),
     * cann and cann-<version> (8.5 on); root installs, then user installs */
    cand[n++] = (struct home_cand){"/usr/local/Ascend/ascend-toolkit/latest", "default path"};
    cand[n++] = (struct home_cand){"/usr/local/Ascend/cann", "default path"};
    if (newest_versioned("/usr/local/Ascend", versioned, sizeof versioned))
        cand[n++] = (struct home_cand){versioned, "default path"};
    const char *h = getenv("HOME");
    snprintf(user_home, sizeof user_home, "%.400s/Ascend/ascend-toolkit/latest", h && *h ? h : "/root");
    snprintf(user_cann, sizeof user_cann, "%.400s/Ascend/cann", h && *h ? h : "/root");
    cand[n++] = (struct home_cand){user_home, "default user path"};
    cand[n++] = (struct home_cand){user_cann, "default user path"};
    for (int i = 0; i < n; i++) {
        if (is_dir(cand[i].path)) {
            char *abs = realpath(cand[i].path, NULL);
            snprintf(tk->home, sizeof tk->home, "%.500s", abs ? abs : cand[i].path);
            free(abs);
            snprintf(tk->home_from, sizeof tk->home_from, "%s", cand[i].from);
            return 1;
        }
        if (i < n_explicit) { /* an explicit location that is wrong: say so */
            char m[ASC_PATH_MAX + 64];
            snprintf(m, sizeof m, "%s=%.400s is not a directory", cand[i].from, cand[i].path);
            missing_add(tk, "%s", m);
        }
    }
    missing_add(tk, n_explicit ? "no CANN toolkit at the default paths either "
                                 "(/usr/local/Ascend/{ascend-toolkit/latest,cann,cann-*}, "
                                 "$HOME/Ascend/{ascend-toolkit/latest,cann})%s"
                               : "ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME are unset (source "
                                 "<cann>/set_env.sh) and no CANN toolkit is at the default paths "
                                 "(/usr/local/Ascend/{ascend-toolkit/latest,cann,cann-*}, "
                                 "$HOME/Ascend/{ascend-toolkit/latest,cann})%s", "");
    return 0;
}

void asc_discover(struct asc_toolkit *tk, const char *home_setting, const char *smi_setting,
                  const char *soc_setting)
{
    memset(tk, 0, sizeof *tk);
    if (!path_find("cmake", tk->cmake, sizeof tk->cmake))
        missing_add(tk, "cmake not found in PATH (the kernel-launch projects are CMake projects)%s", "");
    if (home_pick(tk, home_setting)) {
        char p[ASC_PATH_MAX + 64];
        snprintf(p, sizeof p, "%.500s/KOPE_FAKE_TOOLKIT", tk->home);
        tk->fake = is_file(p);
        static const char *const cmk[] = {"compiler/tikcpp/ascendc_kernel_cmake",
                                          "tools/tikcpp/ascendc_kernel_cmake", NULL};
        if (first_of(tk->cmake_dir, sizeof tk->cmake_dir, tk->home, cmk, 0)) {
            snprintf(p, sizeof p, "%.500s/ascendc.cmake", tk->cmake_dir);
            if (!is_file(p))
                tk->cmake_dir[0] = '\0';
        }
        if (!tk->cmake_dir[0])
            missing_add(tk, "%s has no tikcpp/ascendc_kernel_cmake/ascendc.cmake (the Ascend C CMake modules)", tk->home);
        static const char *const cc[] = {"compiler/ccec_compiler/bin/bisheng", "bin/bisheng", NULL};
        if (!first_of(tk->compiler, sizeof tk->compiler, tk->home, cc, 1))
            missing_add(tk, "%s has no compiler/ccec_compiler/bin/bisheng (the Ascend C compiler)", tk->home);
        static const char *const mp[] = {"tools/profiler/bin/msprof", "bin/msprof", NULL};
        if (!first_of(tk->msprof, sizeof tk->msprof, tk->home, mp, 1))
            missing_add(tk, "%s has no tools/profiler/bin/msprof (kernels are timed by device events only)", tk->home);
        static const char *const pc[] = {"aarch64-linux/data/platform_config", "arm64-linux/data/platform_config",
                                         "x86_64-linux/data/platform_config", "compiler/data/platform_config", NULL};
        if (!first_of(tk->platform_config, sizeof tk->platform_config, tk->home, pc, 0))
            missing_add(tk, "%s has no <arch>-linux/data/platform_config (SoC core counts)", tk->home);
        static const char *const inf[] = {"aarch64-linux/ascend_toolkit_install.info",
                                          "x86_64-linux/ascend_toolkit_install.info",
                                          "compiler/version.info", NULL};
        char info[ASC_PATH_MAX];
        if (first_of(info, sizeof info, tk->home, inf, 1)) {
            char *t = read_small(info, 16384);
            if (t && !kv_find(t, "version", tk->version, sizeof tk->version))
                tk->version[0] = '\0';
            free(t);
        }
        if (!tk->version[0])
            snprintf(tk->version, sizeof tk->version, "unknown");
        snprintf(p, sizeof p, "%.500s/include/aclnnop", tk->home);
        tk->has_aclnn = is_dir(p);
    }
    npu_query(tk, smi_setting);
    if (soc_setting && *soc_setting)
        snprintf(tk->soc, sizeof tk->soc, "%.63s", soc_setting);
    else if (tk->npu_found)
        snprintf(tk->soc, sizeof tk->soc, "Ascend%.50s", tk->npu_name);
    if (tk->soc[0] && tk->platform_config[0]) {
        char ini[ASC_PATH_MAX + 80];
        snprintf(ini, sizeof ini, "%.500s/%.63s.ini", tk->platform_config, tk->soc);
        char *t = read_small(ini, 256 * 1024);
        if (!t || asc_soc_ini_parse(t, tk) != 0)
            missing_add(tk, "no [SoCInfo] ai_core_cnt in %s", ini);
        free(t);
    }
}

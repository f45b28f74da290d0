/*
 * platform/ascend/msprof.c - read what `msprof op` leaves behind.
 *
 * `msprof op --output=DIR APP ARGS` writes a folder OPPROF_{timestamp}_XXX
 * under DIR holding OpBasicInfo.csv (one row per profiled kernel launch:
 * "Op Name", "Op Type", "Task Duration(us)", "Block Dim", ...) and further
 * CSVs (PipeUtilization.csv, ...). How launches are laid out in sub-folders
 * when --launch-count > 1 has changed between CANN releases, so this reader
 * does not depend on it: it walks DIR (depth-limited) and takes every
 * OpBasicInfo.csv it finds, locating columns by header name, never by
 * position. Both the ASCII "(us)" and the full-width "（us）" header are
 * accepted. Caps: files of at most 1 MiB, ASC_MSPROF_MAX_SAMPLES rows.
 * Never checked against a real msprof: the format is the documented one.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/ascend/ascend.h"

#define CSV_MAX_BYTES (1u << 20)
#define CSV_MAX_COLS 64
#define WALK_MAX_DEPTH 5

/* Split one CSV line (no quoted commas in these files; quotes are stripped)
 * into at most max fields, in place. */
static int csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    for (int i = 0; i < n; i++) {
        char *s = f[i];
        while (*s == ' ' || *s == '"' || *s == '\t')
            s++;
        size_t l = strlen(s);
        while (l && (s[l - 1] == ' ' || s[l - 1] == '"' || s[l - 1] == '\r' || s[l - 1] == '\t'))
            s[--l] = '\0';
        f[i] = s;
    }
    return n;
}

int asc_msprof_csv_parse(const char *text, size_t len, const char *kernel, double *ns, int *n,
                         int max)
{
    char *buf = malloc(len + 1);
    if (!buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    int col_dur = -1, col_name = -1, taken = 0, header = 1;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[CSV_MAX_COLS];
        int nf = csv_split(line, f, CSV_MAX_COLS);
        if (header) {
            for (int i = 0; i < nf; i++) {
                if (strncmp(f[i], "Task Duration", 13) == 0)
                    col_dur = i;
                else if (strcmp(f[i], "Op Name") == 0)
                    col_name = i;
            }
            header = 0;
            if (col_dur < 0) {
                free(buf);
                return -1;
            }
            continue;
        }
        if (col_dur >= nf || *n >= max)
            continue;
        if (col_name >= 0 && kernel && *kernel && (col_name >= nf || !strstr(f[col_name], kernel)))
            continue;
        char *end = NULL;
        double us = strtod(f[col_dur], &end);
        if (end == f[col_dur] || !(us > 0) || us > 1e9)
            continue;
        ns[(*n)++] = us * 1000.0;
        taken++;
    }
    free(buf);
    return taken;
}

static void walk(const char *dir, int depth, const char *kernel, double *ns, int *n, int max)
{
    if (depth > WALK_MAX_DEPTH || *n >= max)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    /* sorted order, so samples come out in a stable order */
    struct dirent **list = NULL;
    closedir(d);
    int cnt = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < cnt; i++) {
        const char *nm = list[i]->d_name;
        if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0 && *n < max) {
            char p[ASC_PATH_MAX + 256];
            snprintf(p, sizeof p, "%.500s/%.250s", dir, nm);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
                walk(p, depth + 1, kernel, ns, n, max);
            } else if (S_ISREG(st.st_mode) && strcmp(nm, "OpBasicInfo.csv") == 0 &&
                       st.st_size <= CSV_MAX_BYTES) {
                FILE *f = fopen(p, "rb");
                if (f) {
                    char *text = malloc((size_t)st.st_size + 1);
                    size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
                    if (text)
                        asc_msprof_csv_parse(text, got, kernel, ns, n, max);
                    free(text);
                    fclose(f);
                }
            }
        }
        free(list[i]);
    }
    free(list);
}

int asc_msprof_collect(const char *dir, const char *kernel, double *ns, int max)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    int n = 0;
    walk(dir, 0, kernel, ns, &n, max);
    return n;
}

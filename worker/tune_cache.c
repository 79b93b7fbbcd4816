/* worker/tune_cache.c — see tune_cache.h. Entries live in one array, searched linearly (a few
 * hundred per fingerprint); the file is parsed by s_parse both when opened and when merged on
 * save. */
#include "worker/tune_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"

/* the longest path accepted: its temporary sibling (path.tmp.PID) and its parent still fit the
 * fixed buffers of wrk_tune_cache_save */
#define S_PATH_MAX 4000

typedef struct s_entry {
    char *fp, *key, *desc;
    int32_t rank;
} s_entry_t;

typedef struct s_list {
    s_entry_t *v;
    size_t n, cap;
} s_list_t;

struct wrk_tune_cache {
    char *path, *fp;
    s_list_t list; /* every fingerprint's entries, file order, then ours */
    bool dirty;
    int32_t skipped;
    char warning[COM_ERROR_MSG_MAX]; /* why the file was ignored, or "" */
};

static void s_list_free(s_list_t *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].fp), free(l->v[i].key), free(l->v[i].desc);
    free(l->v);
    *l = (s_list_t){0};
}

static s_entry_t *s_find(const s_list_t *l, const char *fp, const char *key) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].fp, fp) == 0 && strcmp(l->v[i].key, key) == 0)
            return &l->v[i];
    return NULL;
}

/* Sets (fp, key) to (rank, desc), adding an entry if needed. Returns 0 or COM_ENOMEM. */
static int s_set(s_list_t *l, const char *fp, const char *key, int32_t rank, const char *desc) {
    s_entry_t *e = s_find(l, fp, key);
    if (e) {
        char *d = strdup(desc);
        if (!d)
            return COM_ENOMEM;
        free(e->desc);
        e->desc = d, e->rank = rank;
        return 0;
    }
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 64;
        s_entry_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return COM_ENOMEM;
        l->v = v, l->cap = cap;
    }
    s_entry_t n = {strdup(fp), strdup(key), strdup(desc), rank};
    if (!n.fp || !n.key || !n.desc) {
        free(n.fp), free(n.key), free(n.desc);
        return COM_ENOMEM;
    }
    l->v[l->n++] = n;
    return 0;
}

/* A field may hold any byte but TAB, CR, LF and NUL, and must not be empty. */
static bool s_field_ok(const char *s, size_t max) {
    const size_t n = strlen(s);
    return n > 0 && n < max && strcspn(s, "\t\r\n") == n;
}

/* Parses text (NUL-terminated) into l; malformed lines are counted in *skipped. Returns 0 or
 * COM_ENOMEM. */
static int s_parse(char *text, s_list_t *l, int32_t *skipped) {
    for (char *line = text, *next; line && *line; line = next) {
        char *nl = strchr(line, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        const size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[len - 1] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        char *f[4] = {line, NULL, NULL, NULL};
        int nf = 1;
        for (char *p = line; *p && nf <= 4; p++)
            if (*p == '\t') {
                *p = '\0';
                if (nf < 4)
                    f[nf] = p + 1;
                nf++;
            }
        char *end = NULL;
        errno = 0;
        const long rank = nf == 4 ? strtol(f[2], &end, 10) : 0;
        if (len >= WRK_TUNE_CACHE_MAX_LINE || nf != 4 || !*f[0] || !*f[1] || !*f[3] ||
            end == f[2] || *end != '\0' || errno != 0 || rank < INT32_MIN || rank > INT32_MAX) {
            (*skipped)++;
            continue;
        }
        if (s_set(l, f[0], f[1], (int32_t)rank, f[3]) != 0)
            return COM_ENOMEM;
    }
    return 0;
}

/* Reads path into l. A missing file is empty; so is an unreadable or oversized one, with
 * why in warning (when not NULL). Returns 0 or COM_ENOMEM. */
static int s_load(const char *path, s_list_t *l, int32_t *skipped, char *warning) {
    if (!com_path_exists(path))
        return 0;
    char *text = NULL;
    size_t len = 0;
    com_error_t e = {0};
    if (com_file_read(path, WRK_TUNE_CACHE_MAX_BYTES, &text, &len, &e) != 0) {
        if (warning)
            snprintf(warning, COM_ERROR_MSG_MAX, "%s", e.msg);
        return 0;
    }
    const int rc = s_parse(text, l, skipped);
    free(text);
    return rc;
}

int wrk_tune_cache_open(const char *path, const char *fingerprint, wrk_tune_cache_t **out,
                        com_error_t *err) {
    *out = NULL;
    if (!path || !*path || strlen(path) > S_PATH_MAX || !fingerprint ||
        !s_field_ok(fingerprint, 256))
        return com_error_set(err, COM_EINVAL, "tune cache: bad path or fingerprint");
    wrk_tune_cache_t *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path)) || !(c->fp = strdup(fingerprint))) {
        wrk_tune_cache_destroy(&c);
        return com_error_set(err, COM_ENOMEM, "tune cache: out of memory");
    }
    if (s_load(path, &c->list, &c->skipped, c->warning) != 0) {
        wrk_tune_cache_destroy(&c);
        return com_error_set(err, COM_ENOMEM, "tune cache %s: out of memory", path);
    }
    *out = c;
    return 0;
}

void wrk_tune_cache_destroy(wrk_tune_cache_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_tune_cache_t *c = *self_p;
    s_list_free(&c->list);
    free(c->path), free(c->fp), free(c);
    *self_p = NULL;
}

bool wrk_tune_cache_get(const wrk_tune_cache_t *c, const char *key, int32_t *rank,
                        const char **desc) {
    const s_entry_t *e = c && key ? s_find(&c->list, c->fp, key) : NULL;
    if (!e)
        return false;
    *rank = e->rank;
    *desc = e->desc;
    return true;
}

int wrk_tune_cache_put(wrk_tune_cache_t *c, const char *key, int32_t rank, const char *desc,
                       com_error_t *err) {
    if (!c || !key || !desc || !s_field_ok(key, 128) || !s_field_ok(desc, 128))
        return com_error_set(err, COM_EINVAL, "tune cache: bad key or description");
    const s_entry_t *e = s_find(&c->list, c->fp, key);
    if (e && e->rank == rank && strcmp(e->desc, desc) == 0)
        return 0;
    if (s_set(&c->list, c->fp, key, rank, desc) != 0)
        return com_error_set(err, COM_ENOMEM, "tune cache: out of memory");
    c->dirty = true;
    return 0;
}

/* mkdir -p of path's parent directory. */
static int s_make_parent(const char *path, com_error_t *err) {
    char dir[S_PATH_MAX + 1];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return com_error_set(err, COM_EIO, "tune cache %s: path too long", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        const char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return com_error_set(err, COM_EIO, "tune cache: mkdir %s: %s", dir,
                                     strerror(errno));
            *p = c;
        }
        if (c == '\0')
            return 0;
    }
}

int wrk_tune_cache_save(wrk_tune_cache_t *c, com_error_t *err) {
    if (!c || !c->dirty)
        return 0;
    int rc = s_make_parent(c->path, err);
    if (rc != 0)
        return rc;
    /* what other processes saved since we read it, then ours over it */
    s_list_t merged = {0};
    int32_t skipped = 0;
    rc = s_load(c->path, &merged, &skipped, NULL);
    for (size_t i = 0; i < c->list.n && rc == 0; i++) {
        const s_entry_t *e = &c->list.v[i];
        rc = s_set(&merged, e->fp, e->key, e->rank, e->desc);
    }
    if (rc != 0) {
        s_list_free(&merged);
        return com_error_set(err, COM_ENOMEM, "tune cache: out of memory");
    }
    char tmp[S_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", c->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        s_list_free(&merged);
        return com_error_set(err, COM_EIO, "tune cache: open %s: %s", tmp, strerror(errno));
    }
    fprintf(f, "# ember GEMM tuning cache (worker/tune_cache.h): fingerprint, key, rank, "
               "description; delete the file to re-time every GEMM\n");
    for (size_t i = 0; i < merged.n; i++)
        fprintf(f, "%s\t%s\t%d\t%s\n", merged.v[i].fp, merged.v[i].key, (int)merged.v[i].rank,
                merged.v[i].desc);
    s_list_free(&merged);
    const bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, c->path) != 0) {
        rc = com_error_set(err, COM_EIO, "tune cache: writing %s: %s", c->path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    c->dirty = false;
    return 0;
}

int32_t wrk_tune_cache_skipped(const wrk_tune_cache_t *c) {
    return c ? c->skipped : 0;
}

const char *wrk_tune_cache_warning(const wrk_tune_cache_t *c) {
    return c ? c->warning : "";
}

/* tests/test_util.c — see test_util.h. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "tests/test_util.h"

#include <ftw.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int test_checks_passed = 0;
int test_checks_failed = 0;

test_cmp_t test_compare_f32(const char *what, const float *got, const float *ref, size_t n,
                            double atol, double rtol) {
    test_cmp_t c = {0};
    double num = 0, den = 0, dot = 0, ng = 0, nr = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i], d = fabs(g - r);
        if (!(d <= atol + rtol * fabs(r))) { /* NaN counts as bad */
            if (c.n_bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (|diff| %.3g)\n", what, i, g, r, d);
            if (c.n_bad == 0)
                c.first_bad = i;
            c.n_bad++;
        }
        if (d > c.max_abs || isnan(d))
            c.max_abs = isnan(d) ? INFINITY : d;
        num += (g - r) * (g - r);
        den += r * r;
        dot += g * r;
        ng += g * g;
        nr += r * r;
    }
    c.nmse = den > 0 ? num / den : num;
    c.cosine = (ng > 0 && nr > 0) ? dot / sqrt(ng * nr) : (ng == nr ? 1.0 : 0.0);
    if (c.n_bad)
        fprintf(stderr, "  %s: %zu of %zu out of tolerance, max |diff| %.3g, nmse %.3g\n", what,
                c.n_bad, n, c.max_abs, c.nmse);
    return c;
}

double test_gelu_erf(double z) {
    return 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
}

double test_cosine_f32(const float *a, const float *b, size_t n) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        dot += (double)a[i] * b[i];
        na += (double)a[i] * a[i];
        nb += (double)b[i] * b[i];
    }
    return (na > 0 && nb > 0) ? dot / sqrt(na * nb) : 0.0;
}

static const char *s_env(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return (v && *v) ? v : fallback;
}

const char *test_model_dir(void) {
    return s_env("EMBER_TEST_MODEL_DIR", "models/all-MiniLM-L6-v2");
}
const char *test_data_dir(void) {
    return s_env("EMBER_TEST_DATA_DIR", ".");
}
const char *test_source_dir(void) {
    return s_env("EMBER_SOURCE_DIR", ".");
}
const char *test_binary_dir(void) {
    return s_env("EMBER_BINARY_DIR", ".");
}

void test_require_model(void) {
    struct stat st;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", test_model_dir());
    if (stat(path, &st) != 0) {
        fprintf(stderr, "FATAL: model not found at %s; run ops/fetch-model.sh (README.md) first\n",
                test_model_dir());
        exit(1);
    }
}

int test_scratch_dir(const char *prefix, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%s_XXXXXX", test_data_dir(), prefix);
    if (n < 0 || (size_t)n >= cap || !mkdtemp(out)) {
        fprintf(stderr, "cannot create a scratch folder under %s\n", test_data_dir());
        return -1;
    }
    return 0;
}

static int s_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void test_rm_tree(const char *dir) {
    nftw(dir, s_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int test_link_model(const char *src, const char *dst, const char *const *except, size_t n_except) {
    char *real = realpath(src, NULL);
    DIR *d = real ? opendir(real) : NULL;
    int rc = d && mkdir(dst, 0755) == 0 ? 0 : -1;
    for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
        bool skip = de->d_name[0] == '.';
        for (size_t i = 0; i < n_except && !skip; i++)
            skip = strcmp(de->d_name, except[i]) == 0;
        char from[4096], to[4096];
        if (skip)
            continue;
        if (snprintf(from, sizeof from, "%s/%s", real, de->d_name) >= (int)sizeof from ||
            snprintf(to, sizeof to, "%s/%s", dst, de->d_name) >= (int)sizeof to ||
            symlink(from, to) != 0)
            rc = -1;
    }
    if (d)
        closedir(d);
    free(real);
    return rc;
}

static int s_write_text(const char *dir, const char *name, const char *text) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) != 0 ? -1 : rc;
}

int test_write_pooling(const char *dir, int hidden, const char *flag, bool normalize) {
    char modules[1024], pooling[256], sub[4096];
    snprintf(modules, sizeof modules,
             "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
             "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
             "\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}%s]",
             normalize ? ", {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", "
                         "\"type\": \"sentence_transformers.models.Normalize\"}"
                       : "");
    snprintf(pooling, sizeof pooling, "{\"word_embedding_dimension\": %d, \"%s\": true}", hidden,
             flag);
    if (snprintf(sub, sizeof sub, "%s/1_Pooling", dir) >= (int)sizeof sub ||
        (mkdir(sub, 0755) != 0 && errno != EEXIST))
        return -1;
    return s_write_text(dir, "modules.json", modules) == 0 &&
                   s_write_text(dir, "1_Pooling/config.json", pooling) == 0
               ? 0
               : -1;
}

int test_finish(void) {
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    return (test_checks_failed == 0 && test_checks_passed > 0) ? 0 : 1;
}

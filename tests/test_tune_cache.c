/* tests/test_tune_cache.c — worker/tune_cache.c: round trip through a real file (parent folders
 * created), fingerprints kept apart, concurrent savers merged, malformed and oversized files
 * survived, bad keys refused, nothing written when nothing changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/test_util.h"
#include "worker/tune_cache.h"

static char g_dir[512];

static void s_write(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static wrk_tune_cache_t *s_open(const char *path, const char *fp) {
    wrk_tune_cache_t *c = NULL;
    com_error_t err = {0};
    CHECK_MSG(wrk_tune_cache_open(path, fp, &c, &err) == 0 && c, "open %s: %s", path, err.msg);
    return c;
}

/* true iff the cache holds key with exactly rank and desc */
static bool s_has(const wrk_tune_cache_t *c, const char *key, int32_t rank, const char *desc) {
    int32_t r = 0;
    const char *d = NULL;
    return wrk_tune_cache_get(c, key, &r, &d) && r == rank && strcmp(d, desc) == 0;
}

static void test_round_trip(void) {
    char path[640];
    snprintf(path, sizeof path, "%s/a/b/tune.txt", g_dir); /* a/b do not exist yet */
    com_error_t err = {0};
    wrk_tune_cache_t *c = s_open(path, "NVIDIA H200 sm90 132 cublasLt 130000");
    int32_t r = 7;
    const char *d = NULL;
    CHECK(!wrk_tune_cache_get(c, "128 384 1152 1", &r, &d) && r == 7);
    CHECK(wrk_tune_cache_save(c, &err) == 0); /* nothing put: nothing written */
    struct stat st;
    CHECK(stat(path, &st) != 0);
    CHECK(wrk_tune_cache_put(c, "128 384 1152 1", 0, "cublasLt #0 algo 66 tile 59 splitK 1",
                             &err) == 0);
    CHECK(wrk_tune_cache_put(c, "128 384 1536 2", -3, "mma 64x64 w4", &err) == 0);
    CHECK(wrk_tune_cache_put(c, "128 384 1536 2", -2, "mma 32x64 w4 k64", &err) == 0); /* replace */
    CHECK_MSG(wrk_tune_cache_save(c, &err) == 0, "save: %s", err.msg);
    CHECK(stat(path, &st) == 0);
    wrk_tune_cache_destroy(&c);
    CHECK(c == NULL);

    c = s_open(path, "NVIDIA H200 sm90 132 cublasLt 130000");
    CHECK(s_has(c, "128 384 1152 1", 0, "cublasLt #0 algo 66 tile 59 splitK 1"));
    CHECK(s_has(c, "128 384 1536 2", -2, "mma 32x64 w4 k64"));
    CHECK(wrk_tune_cache_skipped(c) == 0 && wrk_tune_cache_warning(c)[0] == '\0');
    wrk_tune_cache_destroy(&c);

    /* another GPU's entries: invisible to this one, kept in the file */
    c = s_open(path, "NVIDIA L4 sm89 58 cublasLt 130000");
    CHECK(!wrk_tune_cache_get(c, "128 384 1152 1", &r, &d));
    CHECK(wrk_tune_cache_put(c, "128 384 1152 1", 3, "cublasLt #3 algo 21 tile 18 splitK 1",
                             &err) == 0);
    CHECK(wrk_tune_cache_save(c, &err) == 0);
    wrk_tune_cache_destroy(&c);
    c = s_open(path, "NVIDIA H200 sm90 132 cublasLt 130000");
    CHECK(s_has(c, "128 384 1152 1", 0, "cublasLt #0 algo 66 tile 59 splitK 1"));
    wrk_tune_cache_destroy(&c);
    c = s_open(path, "NVIDIA L4 sm89 58 cublasLt 130000");
    CHECK(s_has(c, "128 384 1152 1", 3, "cublasLt #3 algo 21 tile 18 splitK 1"));
    wrk_tune_cache_destroy(&c);

    /* two workers started together: each saves what it timed, neither loses the other's */
    wrk_tune_cache_t *a = s_open(path, "fp"), *b = s_open(path, "fp");
    CHECK(wrk_tune_cache_put(a, "k1", 1, "one", &err) == 0);
    CHECK(wrk_tune_cache_put(b, "k2", 2, "two", &err) == 0);
    CHECK(wrk_tune_cache_save(a, &err) == 0 && wrk_tune_cache_save(b, &err) == 0);
    wrk_tune_cache_destroy(&a), wrk_tune_cache_destroy(&b);
    c = s_open(path, "fp");
    CHECK(s_has(c, "k1", 1, "one") && s_has(c, "k2", 2, "two"));
    wrk_tune_cache_destroy(&c);
    c = s_open(path, "NVIDIA H200 sm90 132 cublasLt 130000");
    CHECK(s_has(c, "128 384 1536 2", -2, "mma 32x64 w4 k64"));
    wrk_tune_cache_destroy(&c);
}

static void test_untrusted_file(void) {
    char path[640];
    snprintf(path, sizeof path, "%s/bad.txt", g_dir);
    char longline[2048];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "fp\tlong\t1\t", 10);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = '\0';
    char text[8192];
    snprintf(text, sizeof text,
             "# a comment\n"
             "\n"
             "fp\tgood\t-4\tmma 128x32 w4 k64 splitk8\n"
             "fp\tcrlf\t5\tcublasLt #5\r\n"
             "fp\tthree fields\t1\n"        /* skipped: 3 fields */
             "fp\tfive\t1\tdesc\textra\n"   /* skipped: 5 fields */
             "fp\tnumber\t12x\tdesc\n"      /* skipped: not a number */
             "fp\tempty rank\t\tdesc\n"     /* skipped: empty number */
             "fp\tbig\t99999999999\tdesc\n" /* skipped: over int32 */
             "fp\t\t1\tdesc\n"              /* skipped: empty key */
             "fp\tno desc\t1\t\n"           /* skipped: empty description */
             "%s"                           /* skipped: over the line limit */
             "fp\tlast\t2\tno newline at the end",
             longline);
    s_write(path, text);
    wrk_tune_cache_t *c = s_open(path, "fp");
    CHECK(s_has(c, "good", -4, "mma 128x32 w4 k64 splitk8"));
    CHECK(s_has(c, "crlf", 5, "cublasLt #5"));
    CHECK(s_has(c, "last", 2, "no newline at the end"));
    CHECK_MSG(wrk_tune_cache_skipped(c) == 8, "skipped %d", (int)wrk_tune_cache_skipped(c));
    int32_t r;
    const char *d;
    CHECK(!wrk_tune_cache_get(c, "number", &r, &d) && !wrk_tune_cache_get(c, "long", &r, &d));
    /* saving writes back only well-formed lines */
    com_error_t err = {0};
    CHECK(wrk_tune_cache_put(c, "new", 1, "x", &err) == 0 && wrk_tune_cache_save(c, &err) == 0);
    wrk_tune_cache_destroy(&c);
    c = s_open(path, "fp");
    CHECK(wrk_tune_cache_skipped(c) == 0 && s_has(c, "good", -4, "mma 128x32 w4 k64 splitk8") &&
          s_has(c, "new", 1, "x"));
    wrk_tune_cache_destroy(&c);

    /* over the size cap: ignored as a whole, with a reason */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        for (size_t i = 0; i < WRK_TUNE_CACHE_MAX_BYTES / 16 + 1; i++)
            fputs("fp\tk\t1\tdesc....\n", f);
        fclose(f);
    }
    c = s_open(path, "fp");
    CHECK(!wrk_tune_cache_get(c, "k", &r, &d));
    CHECK_MSG(wrk_tune_cache_warning(c)[0] != '\0', "no warning for an oversized file");
    wrk_tune_cache_destroy(&c);
}

static void test_refused(void) {
    com_error_t err = {0};
    wrk_tune_cache_t *c = NULL;
    CHECK(wrk_tune_cache_open("", "fp", &c, &err) == COM_EINVAL && c == NULL);
    CHECK(wrk_tune_cache_open("/tmp/x", "f\tp", &c, &err) == COM_EINVAL && c == NULL);
    CHECK(wrk_tune_cache_open("/tmp/x", "", &c, &err) == COM_EINVAL && c == NULL);
    char longpath[4100];
    memset(longpath, 'p', sizeof longpath - 1);
    longpath[0] = '/', longpath[sizeof longpath - 1] = '\0';
    CHECK(wrk_tune_cache_open(longpath, "fp", &c, &err) == COM_EINVAL && c == NULL);
    char path[640];
    snprintf(path, sizeof path, "%s/refused.txt", g_dir);
    c = s_open(path, "fp");
    char big[200];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(wrk_tune_cache_put(c, "a\tb", 1, "d", &err) == COM_EINVAL);
    CHECK(wrk_tune_cache_put(c, "a", 1, "d\ne", &err) == COM_EINVAL);
    CHECK(wrk_tune_cache_put(c, "", 1, "d", &err) == COM_EINVAL);
    CHECK(wrk_tune_cache_put(c, big, 1, "d", &err) == COM_EINVAL);
    CHECK(wrk_tune_cache_put(c, "a", 1, big, &err) == COM_EINVAL);
    CHECK(wrk_tune_cache_save(c, &err) == 0); /* nothing valid was put */
    struct stat st;
    CHECK(stat(path, &st) != 0);
    wrk_tune_cache_destroy(&c);

    /* a parent that is a file: COM_EIO naming the problem, the cache still usable */
    char file[640], under[700];
    snprintf(file, sizeof file, "%s/plain", g_dir);
    s_write(file, "x");
    snprintf(under, sizeof under, "%s/sub/tune.txt", file);
    c = s_open(under, "fp");
    CHECK(wrk_tune_cache_put(c, "k", 1, "d", &err) == 0);
    CHECK_MSG(wrk_tune_cache_save(c, &err) == COM_EIO && strstr(err.msg, "plain"), "save: %s",
              err.msg);
    CHECK(s_has(c, "k", 1, "d"));
    wrk_tune_cache_destroy(&c);
}

int main(void) {
    if (test_scratch_dir("tune_cache", g_dir, sizeof g_dir) != 0) {
        fprintf(stderr, "no scratch dir\n");
        return 1;
    }
    test_round_trip();
    test_untrusted_file();
    test_refused();
    test_rm_tree(g_dir);
    return test_finish();
}

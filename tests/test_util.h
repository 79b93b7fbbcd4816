/* tests/test_util.h — what every test program shares: check macros that count failures and
 * keep going, the one float-comparison helper (per element |got-ref| <= atol + rtol*|ref|,
 * whole-tensor NMSE, cosine), and the paths ctest passes in the environment.
 * A test program ends with `return test_finish();`, which prints "N passed, N failed". */
#ifndef EMBER_TESTS_TEST_UTIL_H
#define EMBER_TESTS_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ctest treats this exit code as "skipped" (SKIP_RETURN_CODE), e.g. for GPU tests w/o a GPU. */
#define TEST_SKIP_CODE 77

extern int test_checks_passed;
extern int test_checks_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            test_checks_passed++;                                                                  \
        } else {                                                                                   \
            test_checks_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            test_checks_passed++;                                                                  \
        } else {                                                                                   \
            test_checks_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Result of comparing got against ref. */
typedef struct test_cmp {
    size_t n_bad;     /* elements outside atol + rtol*|ref| */
    double max_abs;   /* max |got - ref| */
    double nmse;      /* sum (got-ref)^2 / sum ref^2 */
    double cosine;    /* cosine similarity of the two vectors */
    size_t first_bad; /* index of the first bad element (n_bad > 0) */
} test_cmp_t;

/* Compares n floats; prints up to 5 failing elements under `what` when any is out of
 * tolerance. Returns the summary (does not count a CHECK). */
test_cmp_t test_compare_f32(const char *what, const float *got, const float *ref, size_t n,
                            double atol, double rtol);
double test_cosine_f32(const float *a, const float *b, size_t n);
/* GELU, exact (erf) form, in double: the reference the GELU kernels are checked against */
double test_gelu_erf(double z);

/* Environment set by ctest (tests/CMakeLists.txt): the model directory, a scratch folder, the
 * source and build trees. Never NULL: falls back to defaults relative to the build tree. */
const char *test_model_dir(void);
const char *test_data_dir(void);
const char *test_source_dir(void);
const char *test_binary_dir(void);

/* Fails the whole program with a clear message when the model directory is missing (the tests
 * need ops/fetch-model.sh to have run). */
void test_require_model(void);

/* Makes a fresh scratch folder "<test_data_dir>/<prefix>_XXXXXX" into out[cap]. 0 or -1. */
int test_scratch_dir(const char *prefix, char *out, size_t cap);
/* Removes a folder and everything below it (links are not followed). */
void test_rm_tree(const char *dir);

/* Makes dst (a new folder) a model directory of links to src's entries (src may be relative),
 * but for the names in except[0..n_except). 0 or -1. */
int test_link_model(const char *src, const char *dst, const char *const *except, size_t n_except);
/* Writes dir's modules.json (Transformer, Pooling at 1_Pooling, then Normalize when normalize)
 * and 1_Pooling/config.json with the one pooling_mode_* flag given ("pooling_mode_cls_token",
 * "pooling_mode_lasttoken", ...). 0 or -1. */
int test_write_pooling(const char *dir, int hidden, const char *flag, bool normalize);

/* Prints the totals; returns 0 when nothing failed and at least one check ran, else 1. */
int test_finish(void);

#endif

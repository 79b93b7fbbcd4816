/* tests/test_model_files_safetensors.c — common/safetensors.c against the real model file and a
 * battery of hostile files this test writes into a fresh folder under EMBER_TEST_DATA_DIR.
 *
 * Covers: every tensor the BERT loader needs is found with the shape config.json implies; a
 * value read through com_tensor_to_f32 equals the raw little-endian float at its file offset;
 * each malformed file gives its documented code and a message (printed) through both
 * com_safetensors_open and com_safetensors_open_buffer; f16/bf16 conversion (subnormals, inf,
 * NaN, -0) against hand-computed values from unaligned data. Single-threaded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/model_info.h"
#include "common/safetensors.h"
#include "tests/test_util.h"

static char s_tmp[4096]; /* the scratch folder of this run */
static int s_file_no;

/* Writes bytes to a new file in s_tmp; returns its path in out[cap]. */
static void s_write_raw(const char *name, const void *bytes, size_t n, char *out, size_t cap) {
    snprintf(out, cap, "%s/%02d_%s.safetensors", s_tmp, s_file_no++, name);
    FILE *f = fopen(out, "wb");
    CHECK_MSG(f != NULL, "cannot create %s", out);
    if (!f)
        return;
    CHECK(n == 0 || fwrite(bytes, 1, n, f) == n);
    fclose(f);
}

/* Builds [u64 LE len(header)] header data into a new buffer (*len); caller frees. */
static unsigned char *s_build(const char *header, const void *data, size_t data_len, size_t *len) {
    size_t hl = strlen(header);
    *len = 8 + hl + data_len;
    unsigned char *b = malloc(*len);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (data_len)
        memcpy(b + 8 + hl, data, data_len);
    return b;
}

/* Opens bytes both as a file and as a buffer; checks both give want_rc with a message; message
 * must contain `needle` when not NULL. */
static void s_expect(const char *name, const void *bytes, size_t n, int want_rc,
                     const char *needle) {
    char path[4200];
    s_write_raw(name, bytes, n, path, sizeof path);
    com_error_t err = {0};
    com_safetensors_t *st = (com_safetensors_t *)1;
    int rc = com_safetensors_open(path, &st, &err);
    printf("  %-22s file:   %-12s %s\n", name, com_error_name(rc), err.msg);
    CHECK_MSG(rc == want_rc, "%s: got %s want %s", name, com_error_name(rc),
              com_error_name(want_rc));
    CHECK_MSG(rc == 0 || (st == NULL && err.code == rc && err.msg[0]), "%s: no message", name);
    CHECK_MSG(rc == 0 || strstr(err.msg, path) != NULL, "%s: message does not name the file", name);
    if (needle)
        CHECK_MSG(strstr(err.msg, needle) != NULL, "%s: message lacks \"%s\"", name, needle);
    com_safetensors_destroy(&st);
    /* Same code without an error record. */
    CHECK(com_safetensors_open(path, &st, NULL) == want_rc);
    com_safetensors_destroy(&st);

    com_error_t err2 = {0};
    st = (com_safetensors_t *)1;
    rc = com_safetensors_open_buffer(bytes, n, &st, &err2);
    CHECK_MSG(rc == want_rc, "%s (buffer): got %s want %s", name, com_error_name(rc),
              com_error_name(want_rc));
    CHECK_MSG(rc == 0 || (st == NULL && err2.msg[0]), "%s (buffer): no message", name);
    com_safetensors_destroy(&st);
    CHECK(st == NULL);
}

static void s_expect_header(const char *name, const char *header, size_t data_len, int want_rc,
                            const char *needle) {
    unsigned char *data = calloc(data_len ? data_len : 1, 1);
    size_t n;
    unsigned char *b = s_build(header, data, data_len, &n);
    s_expect(name, b, n, want_rc, needle);
    free(b);
    free(data);
}

static void s_test_hostile(void) {
    printf("hostile files:\n");
    unsigned char b[64] = {0};
    s_expect("empty", b, 0, COM_EFORMAT, NULL);
    s_expect("7_bytes", b, 7, COM_EFORMAT, NULL);
    s_expect("len_0", b, 16, COM_EFORMAT, "header length 0");
    b[0] = 1;
    s_expect("len_1", b, 16, COM_EFORMAT, "header length 1");
    b[0] = 100; /* 100 bytes of header, 8 in the file */
    s_expect("len_past_end", b, 16, COM_EFORMAT, "header length 100");
    memset(b, 0, 8);
    b[7] = 0x80; /* 2^63 */
    s_expect("len_2^63", b, 16, COM_EFORMAT, "9223372036854775808");
    memset(b, 0xff, 8);
    s_expect("len_2^64-1", b, 16, COM_EFORMAT, NULL);

    /* Header length over the 100 MiB cap in a file large enough to hold it (sparse). */
    {
        char path[4200];
        snprintf(path, sizeof path, "%s/%02d_len_over_cap.safetensors", s_tmp, s_file_no++);
        uint64_t hl = ((uint64_t)100 << 20) + 1;
        unsigned char h[8];
        for (int i = 0; i < 8; i++)
            h[i] = (unsigned char)(hl >> (8 * i));
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) {
            CHECK(fwrite(h, 1, 8, f) == 8);
            fclose(f);
            CHECK(truncate(path, (off_t)(hl + 64)) == 0);
            com_error_t err = {0};
            com_safetensors_t *st = NULL;
            int rc = com_safetensors_open(path, &st, &err);
            printf("  %-22s file:   %-12s %s\n", "len_over_cap", com_error_name(rc), err.msg);
            CHECK(rc == COM_EFORMAT && st == NULL);
            CHECK(strstr(err.msg, "cap") != NULL);
            unlink(path);
        }
    }

    s_expect_header("not_json", "this is not json", 0, COM_EFORMAT, "invalid JSON");
    s_expect_header("json_array", "[1, 2, 3]", 0, COM_EFORMAT, "not a JSON object");
    s_expect_header("json_string", "\"abc\"", 0, COM_EFORMAT, NULL);
    s_expect_header("truncated_json", "{\"a\": {\"dtype\": \"F32\"", 0, COM_EFORMAT, NULL);
    s_expect_header("entry_not_object", "{\"a\": 5}", 0, COM_EFORMAT, "\"a\"");
    s_expect_header("missing_dtype", "{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "dtype");
    s_expect_header("missing_shape", "{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "shape");
    s_expect_header("missing_offsets", "{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4,
                    COM_EFORMAT, "data_offsets");
    s_expect_header("dtype_not_string",
                    "{\"w\": {\"dtype\": 7, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "dtype");
    s_expect_header("unknown_dtype",
                    "{\"w\": {\"dtype\": \"U32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EUNSUPPORTED, "U32");
    s_expect_header("lowercase_dtype",
                    "{\"w\": {\"dtype\": \"f32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EUNSUPPORTED, "f32");
    s_expect_header("negative_dim",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "shape[0]");
    s_expect_header("float_dim",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [1.0], \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "shape[0]");
    s_expect_header("shape_not_array",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "shape");
    s_expect_header("dim_overflow",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, "
                    "4294967296], \"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "overflow");
    s_expect_header("dim_overflow_2",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904], "
                    "\"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "overflow");
    s_expect_header("dim_too_big_json",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [99999999999999999999], "
                    "\"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, NULL);
    s_expect_header("9_dims",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], "
                    "\"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "9 dims");
    s_expect_header("offsets_past_end",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 4,
                    COM_EFORMAT, "past the data section");
    s_expect_header("begin_gt_end",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [4, 0]}}", 4,
                    COM_EFORMAT, "begin <= end");
    s_expect_header("negative_offset",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 4,
                    COM_EFORMAT, "data_offsets");
    s_expect_header("offsets_3",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]}}", 8,
                    COM_EFORMAT, "data_offsets");
    s_expect_header("offsets_float",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4.0]}}", 4,
                    COM_EFORMAT, "data_offsets");
    s_expect_header("size_mismatch",
                    "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 16,
                    COM_EFORMAT, "need 12");
    s_expect_header("size_mismatch_f16",
                    "{\"w\": {\"dtype\": \"F16\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}",
                    16, COM_EFORMAT, "need 8");
    s_expect_header("overlap",
                    "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                    " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                    12, COM_EFORMAT, "overlaps");
    s_expect_header("overlap_same_range",
                    "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                    " \"b\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "overlaps");
    s_expect_header("overlap_contained",
                    "{\"a\": {\"dtype\": \"U8\", \"shape\": [16], \"data_offsets\": [0, 16]},"
                    " \"z\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [16, 18]},"
                    " \"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [6, 10]}}",
                    18, COM_EFORMAT, "overlaps");
    s_expect_header("duplicate_names",
                    "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                    " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                    8, COM_EFORMAT, "duplicate");
    s_expect_header("nul_in_name",
                    "{\"a\\u0000b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, "
                    "4]}}",
                    4, COM_EFORMAT, "NUL");
    s_expect_header("empty_name",
                    "{\"\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                    COM_EFORMAT, "empty");
    s_expect_header("metadata_array",
                    "{\"__metadata__\": [\"pt\"], \"w\": {\"dtype\": \"F32\", \"shape\": [1], "
                    "\"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "__metadata__");
    s_expect_header("metadata_int_value",
                    "{\"__metadata__\": {\"format\": 1}, \"w\": {\"dtype\": \"F32\", \"shape\": "
                    "[1], \"data_offsets\": [0, 4]}}",
                    4, COM_EFORMAT, "format");
    s_expect_header("metadata_string", "{\"__metadata__\": \"pt\"}", 0, COM_EFORMAT,
                    "__metadata__");
    /* Raw NUL bytes inside the header (not JSON; jansson would skip this one). */
    {
        static const char h[] = "{\"w\": {\"dtype\": \"F32\", \"shape\": [0], "
                                "\"data_offsets\": [0, 0]}\0}";
        size_t n;
        unsigned char *bb = NULL;
        n = 8 + sizeof h - 1;
        bb = calloc(n, 1);
        bb[0] = (unsigned char)(sizeof h - 1);
        memcpy(bb + 8, h, sizeof h - 1);
        s_expect("raw_nul_in_header", bb, n, COM_EFORMAT, "NUL");
        free(bb);
    }
}

/* Valid files: conversions, metadata, padding, gaps, empty and scalar tensors, lookups. */
static void s_test_valid(void) {
    printf("valid files:\n");
    /* Data: 3 pad bytes, then h[12] f16 at 3 (odd: unaligned), bf16 b[8] at 27, f32 f[2] at 43,
     * i64 at 51, gap, scalar f32 at 64. */
    static const uint16_t h16[12] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400,
                                     0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3555, 0x8001};
    static const uint16_t b16[8] = {0x3f80, 0xc040, 0x4049, 0x7f80, 0x0001, 0x7fc0, 0xff80, 0x8000};
    unsigned char data[68] = {0};
    for (int i = 0; i < 12; i++) {
        data[3 + 2 * i] = (unsigned char)(h16[i] & 0xff);
        data[3 + 2 * i + 1] = (unsigned char)(h16[i] >> 8);
    }
    for (int i = 0; i < 8; i++) {
        data[27 + 2 * i] = (unsigned char)(b16[i] & 0xff);
        data[27 + 2 * i + 1] = (unsigned char)(b16[i] >> 8);
    }
    const float f32[2] = {1.5f, -0.1f};
    memcpy(data + 43, f32, 8); /* little-endian host */
    data[51] = 42;
    const float scalar = 7.25f;
    memcpy(data + 64, &scalar, 4);
    const char *header =
        "{\"__metadata__\": {\"format\": \"pt\"},"
        " \"half\": {\"dtype\": \"F16\", \"shape\": [3, 4], \"data_offsets\": [3, 27]},"
        " \"brain\": {\"dtype\": \"BF16\", \"shape\": [8], \"data_offsets\": [27, 43]},"
        " \"single\": {\"dtype\": \"F32\", \"shape\": [1, 2], \"data_offsets\": [43, 51]},"
        " \"ids\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [51, 59]},"
        " \"empty\": {\"dtype\": \"F32\", \"shape\": [0, 5], \"data_offsets\": [59, 59]},"
        " \"empty2\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [3, 3]},"
        " \"scalar\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [64, 68]}}"
        "      "; /* trailing spaces: the writer pads headers to 8 bytes */
    size_t n;
    unsigned char *b = s_build(header, data, sizeof data, &n);
    s_expect("valid_mixed", b, n, 0, NULL);

    /* Open at an odd address too, so no tensor pointer is aligned by luck. */
    unsigned char *shifted = malloc(n + 1);
    memcpy(shifted + 1, b, n);
    com_error_t err = {0};
    com_safetensors_t *st = NULL;
    CHECK(com_safetensors_open_buffer(shifted + 1, n, &st, &err) == 0);
    if (!st) {
        fprintf(stderr, "valid file did not open: %s\n", err.msg);
        free(shifted);
        free(b);
        return;
    }
    CHECK(com_safetensors_count(st) == 7);
    /* Name order. */
    for (size_t i = 1; i < com_safetensors_count(st); i++)
        CHECK(strcmp(com_safetensors_at(st, i - 1)->name, com_safetensors_at(st, i)->name) < 0);
    CHECK(com_safetensors_at(st, 7) == NULL);
    CHECK(com_safetensors_find(st, "__metadata__") == NULL);
    CHECK(com_safetensors_find(st, "nope") == NULL);
    CHECK(com_safetensors_find(st, "") == NULL);

    const com_tensor_t *t = com_safetensors_find(st, "half");
    CHECK(t && t->dtype == COM_DTYPE_F16 && t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 4);
    CHECK(t && t->nbytes == 24 && com_tensor_numel(t) == 12);
    CHECK(t && (const unsigned char *)t->data == shifted + 1 + n - sizeof data + 3);
    float out[12];
    if (t) {
        CHECK(com_tensor_to_f32(t, out, 12, &err) == 0);
        const float want[12] = {
            1.0f,     -2.0f,     65504.0f, ldexpf(1, -24), ldexpf(1023, -24), ldexpf(1, -14),
            INFINITY, -INFINITY, NAN,      -0.0f,          0.333251953125f,   -ldexpf(1, -24)};
        for (int i = 0; i < 12; i++) {
            if (isnan(want[i]))
                CHECK_MSG(isnan(out[i]), "f16[%d] = %g, want NaN", i, out[i]);
            else
                CHECK_MSG(out[i] == want[i] && !signbit(out[i]) == !signbit(want[i]),
                          "f16[%d] (0x%04x) = %.9g, want %.9g", i, h16[i], out[i], want[i]);
        }
        com_error_t e2 = {0};
        CHECK(com_tensor_to_f32(t, out, 11, &e2) == COM_EINVAL && e2.msg[0]);
        printf("  to_f32 size mismatch: %s\n", e2.msg);
    }
    /* Every f16 bit pattern: finite values round-trip to the exact double formula. */
    {
        int bad = 0;
        for (uint32_t h = 0; h < 0x10000; h++) {
            unsigned char raw[2] = {(unsigned char)(h & 0xff), (unsigned char)(h >> 8)};
            com_tensor_t one = {
                .name = "x", .dtype = COM_DTYPE_F16, .ndim = 0, .data = raw, .nbytes = 2};
            float v;
            if (com_tensor_to_f32(&one, &v, 1, NULL) != 0) {
                bad++;
                continue;
            }
            int e = (int)((h >> 10) & 31), m = (int)(h & 1023);
            double s = (h & 0x8000) ? -1.0 : 1.0, want;
            if (e == 31)
                want = m ? NAN : s * INFINITY;
            else if (e == 0)
                want = s * ldexp(m, -24);
            else
                want = s * ldexp(1024 + m, e - 25);
            if (isnan(want) ? !isnan(v) : ((double)v != want || !signbit(v) != !signbit(want)))
                bad++;
        }
        CHECK_MSG(bad == 0, "%d f16 bit patterns convert wrongly", bad);
    }

    t = com_safetensors_find(st, "brain");
    CHECK(t && t->dtype == COM_DTYPE_BF16);
    if (t) {
        CHECK(com_tensor_to_f32(t, out, 8, &err) == 0);
        const float want[8] = {1.0f, -3.0f,     3.140625f, INFINITY, ldexpf(1, -133),
                               NAN,  -INFINITY, -0.0f};
        for (int i = 0; i < 8; i++) {
            if (isnan(want[i]))
                CHECK_MSG(isnan(out[i]), "bf16[%d] = %g, want NaN", i, out[i]);
            else
                CHECK_MSG(out[i] == want[i] && !signbit(out[i]) == !signbit(want[i]),
                          "bf16[%d] (0x%04x) = %.9g, want %.9g", i, b16[i], out[i], want[i]);
        }
    }
    t = com_safetensors_find(st, "single");
    CHECK(t != NULL);
    if (t) {
        CHECK(com_tensor_to_f32(t, out, 2, &err) == 0);
        CHECK(out[0] == 1.5f && out[1] == -0.1f);
        const int64_t d12[2] = {1, 2}, d21[2] = {2, 1};
        CHECK(com_safetensors_expect(st, "single", 2, d12, &err) == t);
        com_error_t e2 = {0};
        CHECK(com_safetensors_expect(st, "single", 2, d21, &e2) == NULL);
        CHECK(e2.code == COM_EFORMAT && strstr(e2.msg, "[1, 2]") && strstr(e2.msg, "[2, 1]"));
        printf("  expect wrong shape: %s\n", e2.msg);
        com_error_clear(&e2);
        CHECK(com_safetensors_expect(st, "single", 1, d12, &e2) == NULL && e2.code == COM_EFORMAT);
        com_error_clear(&e2);
        CHECK(com_safetensors_expect(st, "missing", 1, d12, &e2) == NULL);
        CHECK(e2.code == COM_EFORMAT && strstr(e2.msg, "missing"));
        printf("  expect missing: %s\n", e2.msg);
        com_error_clear(&e2);
        const int64_t d1[1] = {1};
        CHECK(com_safetensors_expect(st, "ids", 1, d1, &e2) == NULL);
        CHECK(e2.code == COM_EFORMAT && strstr(e2.msg, "I64"));
        printf("  expect int tensor: %s\n", e2.msg);
    }
    t = com_safetensors_find(st, "ids");
    CHECK(t != NULL);
    if (t) {
        int64_t v;
        memcpy(&v, t->data, 8);
        CHECK(v == 42 && t->dtype == COM_DTYPE_I64 && t->nbytes == 8);
        com_error_t e2 = {0};
        float f;
        CHECK(com_tensor_to_f32(t, &f, 1, &e2) == COM_EUNSUPPORTED && e2.msg[0]);
        printf("  to_f32 of I64: %s\n", e2.msg);
    }
    t = com_safetensors_find(st, "empty");
    CHECK(t && com_tensor_numel(t) == 0 && t->nbytes == 0);
    if (t)
        CHECK(com_tensor_to_f32(t, NULL, 0, &err) == 0);
    t = com_safetensors_find(st, "scalar");
    CHECK(t && t->ndim == 0 && com_tensor_numel(t) == 1);
    if (t) {
        float v = 0;
        CHECK(com_tensor_to_f32(t, &v, 1, &err) == 0 && v == 7.25f);
    }
    com_safetensors_destroy(&st);
    CHECK(st == NULL);
    com_safetensors_destroy(&st); /* NULL is fine */
    com_safetensors_destroy(NULL);
    free(shifted);
    free(b);

    /* A header-only file with no tensors is valid. */
    unsigned char *e = s_build("{}", NULL, 0, &n);
    s_expect("no_tensors", e, n, 0, NULL);
    free(e);

    /* dtype names and sizes. */
    CHECK(strcmp(com_dtype_name(COM_DTYPE_BF16), "BF16") == 0);
    CHECK(com_dtype_size(COM_DTYPE_F64) == 8 && com_dtype_size(COM_DTYPE_BOOL) == 1);
    CHECK(com_dtype_size((com_dtype_t)99) == 0 &&
          strcmp(com_dtype_name((com_dtype_t)99), "?") == 0);

    /* Missing file. */
    com_error_t e3 = {0};
    char path[4200];
    snprintf(path, sizeof path, "%s/does-not-exist.safetensors", s_tmp);
    st = (com_safetensors_t *)1;
    CHECK(com_safetensors_open(path, &st, &e3) == COM_EIO && st == NULL);
    printf("  missing file: %s\n", e3.msg);
}

/* The real model: every tensor the BERT loader needs, shapes from config.json. */
static void s_test_real_model(void) {
    printf("real model %s:\n", test_model_dir());
    test_require_model();
    com_error_t err = {0};
    com_model_info_t mi;
    CHECK_MSG(com_model_info_load(test_model_dir(), &mi, &err) == 0, "%s", err.msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", test_model_dir());
    com_safetensors_t *st = NULL;
    CHECK_MSG(com_safetensors_open(path, &st, &err) == 0, "%s", err.msg);
    if (!st)
        return;
    printf("  %zu tensors\n", com_safetensors_count(st));
    CHECK(com_safetensors_count(st) == 104);
    const int64_t H = mi.hidden_size, I = mi.intermediate_size;
    struct {
        const char *name;
        int32_t ndim;
        int64_t d0, d1;
    } need[] = {
        {"embeddings.word_embeddings.weight", 2, mi.vocab_size, H},
        {"embeddings.position_embeddings.weight", 2, mi.max_position_embeddings, H},
        {"embeddings.token_type_embeddings.weight", 2, mi.type_vocab_size, H},
        {"embeddings.LayerNorm.weight", 1, H, 0},
        {"embeddings.LayerNorm.bias", 1, H, 0},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        const int64_t d[2] = {need[i].d0, need[i].d1};
        CHECK_MSG(com_safetensors_expect(st, need[i].name, need[i].ndim, d, &err) != NULL, "%s",
                  err.msg);
    }
    static const struct {
        const char *suffix;
        int32_t ndim;
        int d0, d1; /* 0 = H, 1 = I */
    } layer[] = {
        {"attention.self.query.weight", 2, 0, 0},
        {"attention.self.query.bias", 1, 0, -1},
        {"attention.self.key.weight", 2, 0, 0},
        {"attention.self.key.bias", 1, 0, -1},
        {"attention.self.value.weight", 2, 0, 0},
        {"attention.self.value.bias", 1, 0, -1},
        {"attention.output.dense.weight", 2, 0, 0},
        {"attention.output.dense.bias", 1, 0, -1},
        {"attention.output.LayerNorm.weight", 1, 0, -1},
        {"attention.output.LayerNorm.bias", 1, 0, -1},
        {"intermediate.dense.weight", 2, 1, 0},
        {"intermediate.dense.bias", 1, 1, -1},
        {"output.dense.weight", 2, 0, 1},
        {"output.dense.bias", 1, 0, -1},
        {"output.LayerNorm.weight", 1, 0, -1},
        {"output.LayerNorm.bias", 1, 0, -1},
    };
    int found = 0;
    for (int l = 0; l < mi.num_layers; l++) {
        for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
            char name[256];
            snprintf(name, sizeof name, "encoder.layer.%d.%s", l, layer[k].suffix);
            const int64_t d[2] = {layer[k].d0 ? I : H, layer[k].d1 == 1 ? I : H};
            const com_tensor_t *t = com_safetensors_expect(st, name, layer[k].ndim, d, &err);
            CHECK_MSG(t != NULL, "%s", err.msg);
            found += t != NULL;
        }
    }
    CHECK(found == 16 * mi.num_layers);
    /* The I64 position_ids is there but not a float tensor. */
    const com_tensor_t *pid = com_safetensors_find(st, "embeddings.position_ids");
    CHECK(pid && pid->dtype == COM_DTYPE_I64 && pid->ndim == 2 && pid->shape[1] == 512);

    /* Spot-check: first element of embeddings.LayerNorm.weight equals the raw LE float at
     * 8 + N + begin in the file (begin 5632 in the published file). */
    const com_tensor_t *lnw = com_safetensors_find(st, "embeddings.LayerNorm.weight");
    FILE *f = fopen(path, "rb");
    unsigned char hdr[8], raw[4];
    CHECK(f && fread(hdr, 1, 8, f) == 8);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | hdr[i];
    CHECK(f && fseek(f, (long)(8 + hl + 5632), SEEK_SET) == 0 && fread(raw, 1, 4, f) == 4);
    if (f)
        fclose(f);
    uint32_t bits =
        (uint32_t)raw[0] | (uint32_t)raw[1] << 8 | (uint32_t)raw[2] << 16 | (uint32_t)raw[3] << 24;
    float want;
    memcpy(&want, &bits, 4);
    if (lnw) {
        float *v = malloc((size_t)H * sizeof *v);
        CHECK(com_tensor_to_f32(lnw, v, (size_t)H, &err) == 0);
        printf("  embeddings.LayerNorm.weight[0] = %.9g, raw file float = %.9g\n", v[0], want);
        CHECK(v[0] == want && want != 0.0f);
        int finite = 1;
        for (int64_t i = 0; i < H; i++)
            finite &= isfinite(v[i]) != 0;
        CHECK(finite);
        free(v);
    }
    /* Every tensor lies inside the file and ranges are consistent. */
    size_t total = 0;
    for (size_t i = 0; i < com_safetensors_count(st); i++) {
        const com_tensor_t *t = com_safetensors_at(st, i);
        CHECK(t->nbytes == com_tensor_numel(t) * com_dtype_size(t->dtype));
        total += t->nbytes;
    }
    printf("  %zu bytes of tensor data\n", total);
    CHECK(total == 90856960);
    com_safetensors_destroy(&st);
}

int main(void) {
    test_require_model(); /* before the scratch folder, so a missing model leaves nothing */
    if (test_scratch_dir("model_files_safetensors", s_tmp, sizeof s_tmp) != 0) {
        fprintf(stderr, "cannot create a scratch folder under %s\n", test_data_dir());
        return 1;
    }
    s_test_hostile();
    s_test_valid();
    s_test_real_model();
    test_rm_tree(s_tmp);
    return test_finish();
}

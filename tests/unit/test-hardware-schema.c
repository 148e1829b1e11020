/* The hardware schema: its entries cover every byte of TpsHardware but
 * padding, once; its paths are unique and well formed; get/set by path reach
 * the right member with hand-written values, check ranges as the loader
 * does, and name unknown paths. (The load/write/reload round trip through
 * the table is in test-model-file.c: it needs the io layer.) */
#include <check.h>

#include "test-util.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "core/time.h"
#include "cost/hardware-schema.h"

/* Bytes one value of `type` takes, written out here rather than taken from
 * the schema, so that a wrong size there shows. */
static gsize
value_size(TpsHardwareType type)
{
    switch (type) {
    case TPS_HW_DOUBLE:
        return sizeof(double);
    case TPS_HW_UINT:
        return sizeof(guint);
    case TPS_HW_TIME:
        return sizeof(TpsTime);
    case TPS_HW_STRING:
        return sizeof(char *);
    case TPS_HW_BOOL:
        return sizeof(gboolean);
    case TPS_HW_ENUM:
        return sizeof(int);
    }
    ck_abort_msg("unknown type %d", type);
    return 0;
}

static void
cover(guint8 *owner, gsize offset, gsize size, guint8 who, const char *what)
{
    ck_assert_msg(offset + size <= sizeof(TpsHardware), "%s: past the end of TpsHardware", what);
    for (gsize b = offset; b < offset + size; b++) {
        ck_assert_msg(owner[b] == 0 || owner[b] == who,
                      "%s overlaps another entry at byte %zu of TpsHardware", what, b);
        owner[b] = who;
    }
}

/* Every value of TpsHardware is in the table: the bytes its entries (and
 * the lists' item counts) cover leave only gaps that can be padding, that
 * is shorter than the struct's alignment and ending on it. A member missing
 * from the table leaves a gap of its size at least (a double, a pointer),
 * or one that does not end aligned. Blind spot: a guint missing beside
 * another guint in the same 8 bytes looks like padding. */
START_TEST(test_covers_struct)
{
    guint n;
    const TpsHardwareField *fields = tps_hardware_schema(&n);
    guint8 owner[sizeof(TpsHardware)] = {0};
    const gsize align = _Alignof(TpsHardware);

    ck_assert_uint_le(n, 254);
    for (guint i = 0; i < n; i++) {
        const TpsHardwareField *f = &fields[i];
        guint values = f->shape == TPS_HW_SCALAR ? 1
                       : f->shape == TPS_HW_MAP  ? g_strv_length((char **)f->elements)
                                                 : f->list->max_items;
        g_autofree char *what = tps_hardware_field_path(f, 0);
        for (guint v = 0; v < values; v++)
            cover(owner, tps_hardware_field_offset(f, v), value_size(f->type), (guint8)(i + 1),
                  what);
        if (f->shape == TPS_HW_LIST)
            cover(owner, f->list->count_offset, sizeof(guint), 255, "a list's item count");
    }
    /* Not values but where two were written (for the errors of the runs
     * they refuse): no key of their own. */
    cover(owner, offsetof(TpsHardware, nccl_algo_at), sizeof(char *), 255, "nccl.algo's position");
    cover(owner, offsetof(TpsHardware, nccl_proto_at), sizeof(char *), 255,
          "nccl.proto's position");
    for (gsize b = 0; b < sizeof(TpsHardware);) {
        if (owner[b] != 0) {
            b++;
            continue;
        }
        gsize start = b;
        while (b < sizeof(TpsHardware) && owner[b] == 0)
            b++;
        ck_assert_msg(b - start < align && b % align == 0,
                      "bytes %zu to %zu of TpsHardware are in no schema entry", start, b);
    }
}
END_TEST

/* The shape of the table: the loader and the writer rely on these. */
START_TEST(test_table_shape)
{
    guint n;
    const TpsHardwareField *fields = tps_hardware_schema(&n);
    TpsHardware hw = {0};
    hw.n_tiles = TPS_GEMM_MAX_TILES;

    for (guint i = 0; i < n; i++) {
        const TpsHardwareField *f = &fields[i];
        g_autofree char *what = tps_hardware_field_path(f, 0);
        /* The only top-level entry is the name, which the io layer reads
         * and writes by hand. */
        if (f->section == NULL)
            ck_assert_str_eq(f->key, "name");
        /* A section is one run of entries (the writer starts a section
         * where the section changes). */
        for (guint j = i + 1; f->section && j < n; j++)
            if (g_strcmp0(fields[j].section, f->section) != 0)
                for (guint k = j + 1; k < n; k++)
                    ck_assert_msg(g_strcmp0(fields[k].section, f->section) != 0,
                                  "section %s is split", f->section);
        ck_assert_msg(f->min <= f->max, "%s: range", what);
        ck_assert_msg((f->shape == TPS_HW_MAP) == (f->elements != NULL), "%s: elements", what);
        ck_assert_msg((f->shape == TPS_HW_LIST) == (f->list != NULL && f->member != NULL),
                      "%s: list", what);
        ck_assert_msg((f->type == TPS_HW_ENUM) == (f->names != NULL), "%s: names", what);
        ck_assert_msg(f->unit != NULL && f->doc != NULL && *f->doc, "%s: unit and doc", what);
        if (f->fit != NULL) {
            ck_assert_msg(f->type == TPS_HW_DOUBLE, "%s: fitted but not a double", what);
            ck_assert_msg(f->min <= f->fit_min && f->fit_min < f->fit_max && f->fit_max <= f->max,
                          "%s: the fit may leave the loader's range", what);
        }
        /* Every path leads back to its entry and index. */
        for (guint v = 0; v < tps_hardware_field_count(f, &hw); v++) {
            g_autofree char *path = tps_hardware_field_path(f, v);
            guint index = 99;
            ck_assert_ptr_eq(tps_hardware_schema_find(path, &index), f);
            ck_assert_uint_eq(index, v);
        }
    }
}
END_TEST

/* A model set by hand, member by member (not through the schema). */
static void
hand_model(TpsHardware *hw)
{
    memset(hw, 0, sizeof(*hw));
    hw->sms = 132;
    hw->clock_mhz = 1980;
    hw->peak_tflops[TPS_DTYPE_BF16] = 989;
    hw->peak_tflops[TPS_DTYPE_FP16] = 990;
    hw->n_tiles = 2;
    hw->tiles[0] = (TpsGemmTile){256, 128, 0.91};
    hw->tiles[1] = (TpsGemmTile){128, 64, 0.85};
    hw->nvlink_gbps = 450;
    hw->network_latency_us = 2.5;
    hw->nccl_threads = 640;
    hw->nccl_slot_bytes[TPS_PROTO_LL] = 4096;
    hw->nccl_slot_bytes[TPS_PROTO_LL128] = 65536;
    hw->nccl_slot_bytes[TPS_PROTO_SIMPLE] = 131072;
}

static const struct {
    const char *path;
    double value;
} got[] = {
    {"gpu.sms", 132},
    {"gpu.clock_mhz", 1980},
    {"gpu.peak_tflops.bf16", 989},
    {"gpu.peak_tflops.fp16", 990},
    {"gemm.tiles.0.m", 256},
    {"gemm.tiles.1.n", 64},
    {"gemm.tiles.1.efficiency", 0.85},
    {"node.nvlink_gbps", 450},
    {"network.latency_us", 2.5},
    {"nccl.threads", 640},
    {"nccl.slot_bytes.ll", 4096},
    {"nccl.slot_bytes.ll128", 65536},
    {"nccl.slot_bytes.simple", 131072},
};

START_TEST(test_get)
{
    TpsHardware hw;
    hand_model(&hw);
    g_autoptr(GError) error = NULL;
    double v = -1;
    ck_assert_msg(tps_hardware_schema_get(&hw, got[_i].path, &v, &error), "%s",
                  error ? error->message : "?");
    ck_assert_double_eq(v, got[_i].value);
}
END_TEST

START_TEST(test_set)
{
    TpsHardware hw, expect;
    g_autoptr(GError) error = NULL;

    hand_model(&hw);
    hand_model(&expect);
    ck_assert(tps_hardware_schema_set(&hw, "node.nvlink_gbps", 900, &error));
    expect.nvlink_gbps = 900;
    ck_assert(tps_hardware_schema_set(&hw, "nccl.slot_bytes.ll128", 262144, &error));
    expect.nccl_slot_bytes[TPS_PROTO_LL128] = 262144;
    ck_assert(tps_hardware_schema_set(&hw, "gemm.tiles.1.n", 256, &error));
    expect.tiles[1].n = 256;
    ck_assert(tps_hardware_schema_set(&hw, "gemm.tiles.0.efficiency", 0.5, &error));
    expect.tiles[0].efficiency = 0.5;
    ck_assert(tps_hardware_schema_set(&hw, "gpu.peak_tflops.fp16", 1979, &error));
    expect.peak_tflops[TPS_DTYPE_FP16] = 1979;
    ck_assert(tps_hardware_schema_set(&hw, "nccl.channels", 32, &error));
    expect.nccl_channels = 32;
    /* Exactly those members changed, nothing beside them. */
    ck_assert(memcmp(&hw, &expect, sizeof(hw)) == 0);
}
END_TEST

/* Values the loader would reject, and paths that are not numbers of this
 * model: an error naming the path, the model unchanged. */
static const struct {
    const char *path;
    double value;
    const char *message;
} bad_set[] = {
    {"gpu.sms", 2.5, "gpu.sms must be a whole number between 1 and 1024, not 2.5"},
    {"gpu.sms", 0, "gpu.sms must be a whole number between 1 and 1024, not 0"},
    {"gpu.hbm_efficiency", 1.5, "gpu.hbm_efficiency must be a number between 0.05 and 1, not 1.5"},
    {"node.nvlink_gbps", NAN, "node.nvlink_gbps must be a number between 1 and 100000, not nan"},
    {"gemm.tiles.1.m", 4, "gemm.tiles.1.m must be a whole number between 8 and 1024, not 4"},
    {"gemm.tiles.2.m", 64, "hardware field 'gemm.tiles.2.m': the model has 2 tiles"},
    {"gpu.name", 1, "hardware field 'gpu.name' is not a number"},
    {"name", 1, "hardware field 'name' is not a number"},
    {"node.nvlink_gbs", 1,
     "unknown hardware field 'node.nvlink_gbs'; did you mean "
     "'node.nvlink_gbps'?"},
    {"nccl.slot_bytes.LL", 1,
     "unknown hardware field 'nccl.slot_bytes.LL'; did you mean "
     "'nccl.slot_bytes.ll'?"},
    {"nccl.slot_bytes", 1,
     "unknown hardware field 'nccl.slot_bytes'; did you mean "
     "'nccl.slot_bytes.ll'?"},
    {"gemm.tiles.8.m", 64, "unknown hardware field 'gemm.tiles.8.m'"},
    {"gemm.tiles.+1.m", 64, "unknown hardware field 'gemm.tiles.+1.m'"},
    {"gemm.tiles.1", 64, "unknown hardware field 'gemm.tiles.1'"},
    {"network", 1, "unknown hardware field 'network'"},
    {"", 1, "unknown hardware field ''"},
    {"zzz.qqq", 1, "unknown hardware field 'zzz.qqq'"},
};

START_TEST(test_bad_set)
{
    TpsHardware hw, before;
    hand_model(&hw);
    hand_model(&before);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_hardware_schema_set(&hw, bad_set[_i].path, bad_set[_i].value, &error));
    ck_assert_ptr_nonnull(error);
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_str_eq(error->message, bad_set[_i].message);
    ck_assert(memcmp(&hw, &before, sizeof(hw)) == 0);
}
END_TEST

/* Unknown paths: get fails alike, and find says NULL. */
START_TEST(test_unknown_path)
{
    TpsHardware hw;
    hand_model(&hw);
    g_autoptr(GError) error = NULL;
    double v = 7;
    ck_assert(!tps_hardware_schema_get(&hw, "node.nvlink", &v, &error));
    ck_assert_str_eq(error->message,
                     "unknown hardware field 'node.nvlink'; did you mean 'node.nvlink_gbps'?");
    ck_assert_double_eq(v, 7);
    ck_assert_ptr_null(tps_hardware_schema_find("node.nvlink", NULL));
    ck_assert_ptr_null(tps_hardware_schema_find("gpu.sms.x", NULL));
    ck_assert_ptr_null(tps_hardware_schema_find("gpu", NULL));
    ck_assert_ptr_nonnull(tps_hardware_schema_find("gpu.sms", NULL));
}
END_TEST

/* The types no field uses yet (time, bool, enum), through the unchecked
 * accessors, on an entry made here. The model is in allocated memory, which
 * takes the type it is written with, so the entry may lay a TpsTime over a
 * double member's bytes. */
START_TEST(test_other_types)
{
    static const char *const colours[] = {"red", "green", "blue", NULL};
    TpsHardware *hw = g_malloc0(sizeof(TpsHardware));
    char *bytes = (char *)hw;

    TpsHardwareField time = {.section = "t",
                             .key = "time",
                             .type = TPS_HW_TIME,
                             .offset = offsetof(TpsHardware, launch_us)};
    /* 2.007 * 1e3 is 2007.0000000000002: rounded to the nearest ns, not up. */
    tps_hardware_field_set(&time, hw, 0, 2.007);
    ck_assert_int_eq(*(TpsTime *)(void *)(bytes + offsetof(TpsHardware, launch_us)), 2007);
    ck_assert_double_eq(tps_hardware_field_get(&time, hw, 0), 2.007);

    TpsHardwareField flag = {
        .section = "t", .key = "flag", .type = TPS_HW_BOOL, .offset = offsetof(TpsHardware, sms)};
    tps_hardware_field_set(&flag, hw, 0, 1);
    ck_assert_int_eq(*(gboolean *)(void *)(bytes + offsetof(TpsHardware, sms)), TRUE);
    ck_assert_double_eq(tps_hardware_field_get(&flag, hw, 0), 1);

    TpsHardwareField colour = {.section = "t",
                               .key = "colour",
                               .type = TPS_HW_ENUM,
                               .offset = offsetof(TpsHardware, copy_engines),
                               .names = colours};
    tps_hardware_field_set(&colour, hw, 0, 2);
    ck_assert_int_eq(*(int *)(void *)(bytes + offsetof(TpsHardware, copy_engines)), 2);
    ck_assert_double_eq(tps_hardware_field_get(&colour, hw, 0), 2);
    g_free(hw);
}
END_TEST

static Suite *
hardware_schema_suite(void)
{
    Suite *s = suite_create("hardware-schema");
    TCase *tc;

    tc = tcase_create("table");
    tcase_add_test(tc, test_covers_struct);
    tcase_add_test(tc, test_table_shape);
    suite_add_tcase(s, tc);

    tc = tcase_create("path");
    tcase_add_loop_test(tc, test_get, 0, G_N_ELEMENTS(got));
    tcase_add_test(tc, test_set);
    tcase_add_loop_test(tc, test_bad_set, 0, G_N_ELEMENTS(bad_set));
    tcase_add_test(tc, test_unknown_path);
    tcase_add_test(tc, test_other_types);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(hardware_schema_suite());
}

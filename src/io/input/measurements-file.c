/* Measurements files: strict reader; points from traces. */
#include "io/input/measurements-file.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/stats.h"
#include "io/input/yaml-tree.h"

static const char *const top_keys[] = {"source",  "gpu",        "sms",         "gpus",   "cuda",
                                       "nccl",    "gemm",       "collectives", "copies", "launch",
                                       "overlap", "strategies", "gemm_algos",  NULL};
static const char *const gemm_keys[] = {"m", "n", "k", "dtype", "sms", "tflops", NULL};
static const char *const coll_keys[] = {"kind",    "bytes",           "ranks",
                                        "time_us", "launch_included", NULL};
static const char *const copy_keys[] = {"bytes", "time_us", NULL};
static const char *const launch_keys[] = {"what", "us", NULL};
static const char *const overlap_keys[] = {
    "m", "n", "k", "dtype", "comm", "bytes", "ranks", "gemm_alone_us", "gemm_beside_us", NULL};
static const char *const strategy_keys[] = {"name",  "op", "m",      "n",       "k",
                                            "dtype", "tp", "splits", "time_us", NULL};
static const char *const algo_keys[] = {"m",       "n",         "k",         "dtype",
                                        "algo",    "tile_id",   "tile_m",    "tile_n",
                                        "split_k", "cluster_m", "cluster_n", NULL};
static const char *const op_names[] = {"ag_gemm", "gemm_rs", NULL};

/* Largest plausible sizes: a GEMM dimension, bytes of one transfer. */
#define MAX_DIM ((guint64)1 << 40)
#define MAX_BYTES 1e15
#define MAX_US 1e12

typedef struct {
    const TpsYamlDoc *doc;
    const TpsYamlNode *map;
    const char *where; /* "gemm[3]" */
    GError **error;
} Item;

static const TpsYamlNode *
child(const Item *it, const char *key, gboolean required)
{
    const TpsYamlNode *node = tps_yaml_get(it->map, key);
    if (node == NULL && required)
        tps_yaml_error(it->doc, it->map, it->error, "missing key '%s' in %s", key, it->where);
    return node;
}

static gboolean
get_uint(const Item *it, const char *key, guint64 min, guint64 max, guint64 *out)
{
    const TpsYamlNode *node = child(it, key, TRUE);
    g_autofree char *path = g_strdup_printf("%s.%s", it->where, key);
    return node != NULL && tps_yaml_uint(it->doc, node, path, min, max, out, it->error);
}

static gboolean
get_guint(const Item *it, const char *key, guint64 min, guint64 max, guint *out)
{
    guint64 v;
    if (!get_uint(it, key, min, max, &v))
        return FALSE;
    *out = (guint)v;
    return TRUE;
}

static gboolean
get_double(const Item *it, const char *key, double min, double max, double *out)
{
    const TpsYamlNode *node = child(it, key, TRUE);
    g_autofree char *path = g_strdup_printf("%s.%s", it->where, key);
    return node != NULL && tps_yaml_double(it->doc, node, path, min, max, out, it->error);
}

static gboolean
get_enum(const Item *it, const char *key, const char *const *choices, guint *out)
{
    const TpsYamlNode *node = child(it, key, TRUE);
    g_autofree char *path = g_strdup_printf("%s.%s", it->where, key);
    return node != NULL && tps_yaml_enum(it->doc, node, path, choices, out, it->error);
}

static gboolean
get_string(const Item *it, const char *key, const char **out)
{
    const TpsYamlNode *node = child(it, key, TRUE);
    g_autofree char *path = g_strdup_printf("%s.%s", it->where, key);
    if (node == NULL || !tps_yaml_string(it->doc, node, path, out, it->error))
        return FALSE;
    if (**out == '\0')
        return tps_yaml_error(it->doc, node, it->error, "%s must not be empty", path);
    return TRUE;
}

static gboolean
parse_gemm(const Item *it, TpsMeasurements *m)
{
    TpsGemmPoint p = {0};
    guint dtype;
    if (!get_uint(it, "m", 1, MAX_DIM, &p.m) || !get_uint(it, "n", 1, MAX_DIM, &p.n) ||
        !get_uint(it, "k", 1, MAX_DIM, &p.k) || !get_enum(it, "dtype", tps_dtype_names, &dtype) ||
        !get_guint(it, "sms", 0, 4096, &p.sms) || !get_double(it, "tflops", 1e-9, 1e6, &p.tflops))
        return FALSE;
    p.dtype = (TpsDtype)dtype;
    g_array_append_val(m->gemm, p);
    return TRUE;
}

static gboolean
parse_coll(const Item *it, TpsMeasurements *m)
{
    TpsCollPoint p = {.launch_included = TRUE};
    guint kind;
    if (!get_enum(it, "kind", tps_meas_coll_names, &kind) ||
        !get_double(it, "bytes", 1, MAX_BYTES, &p.bytes) ||
        !get_guint(it, "ranks", 2, 1 << 20, &p.ranks) ||
        !get_double(it, "time_us", 1e-6, MAX_US, &p.time_us))
        return FALSE;
    const TpsYamlNode *node = child(it, "launch_included", FALSE);
    if (node != NULL) {
        g_autofree char *path = g_strdup_printf("%s.launch_included", it->where);
        if (!tps_yaml_bool(it->doc, node, path, &p.launch_included, it->error))
            return FALSE;
    }
    p.kind = (TpsMeasColl)kind;
    if (p.kind == TPS_MEAS_SEND_RECV && p.ranks != 2)
        return tps_yaml_error(it->doc, it->map, it->error,
                              "%s: send_recv is between 2 ranks, not %u", it->where, p.ranks);
    g_array_append_val(m->collectives, p);
    return TRUE;
}

static gboolean
parse_copy(const Item *it, TpsMeasurements *m)
{
    TpsCopyPoint p;
    if (!get_double(it, "bytes", 1, MAX_BYTES, &p.bytes) ||
        !get_double(it, "time_us", 1e-6, MAX_US, &p.time_us))
        return FALSE;
    g_array_append_val(m->copies, p);
    return TRUE;
}

static gboolean
parse_launch(const Item *it, TpsMeasurements *m)
{
    TpsLaunchPoint p;
    guint what;
    if (!get_enum(it, "what", tps_meas_launch_names, &what) ||
        !get_double(it, "us", 1e-6, 1e6, &p.us))
        return FALSE;
    p.what = (TpsMeasLaunch)what;
    g_array_append_val(m->launch, p);
    return TRUE;
}

static gboolean
parse_overlap(const Item *it, TpsMeasurements *m)
{
    TpsOverlapPoint p;
    guint dtype, comm;
    if (!get_uint(it, "m", 1, MAX_DIM, &p.m) || !get_uint(it, "n", 1, MAX_DIM, &p.n) ||
        !get_uint(it, "k", 1, MAX_DIM, &p.k) || !get_enum(it, "dtype", tps_dtype_names, &dtype) ||
        !get_enum(it, "comm", tps_meas_coll_names, &comm) ||
        !get_double(it, "bytes", 1, MAX_BYTES, &p.bytes) ||
        !get_guint(it, "ranks", 2, 1 << 20, &p.ranks) ||
        !get_double(it, "gemm_alone_us", 1e-6, MAX_US, &p.gemm_alone_us) ||
        !get_double(it, "gemm_beside_us", 1e-6, MAX_US, &p.gemm_beside_us))
        return FALSE;
    p.dtype = (TpsDtype)dtype;
    p.comm = (TpsMeasColl)comm;
    g_array_append_val(m->overlap, p);
    return TRUE;
}

static gboolean
parse_strategy(const Item *it, TpsMeasurements *m)
{
    TpsStrategyPoint p = {0};
    const char *name;
    guint dtype, op;
    if (!get_string(it, "name", &name) || !get_enum(it, "op", op_names, &op) ||
        !get_uint(it, "m", 1, MAX_DIM, &p.m) || !get_uint(it, "n", 1, MAX_DIM, &p.n) ||
        !get_uint(it, "k", 1, MAX_DIM, &p.k) || !get_enum(it, "dtype", tps_dtype_names, &dtype) ||
        !get_guint(it, "tp", 1, 1 << 20, &p.tp) ||
        !get_guint(it, "splits", 1, 1 << 20, &p.splits) ||
        !get_double(it, "time_us", 1e-6, MAX_US, &p.time_us))
        return FALSE;
    p.name = (char *)name;
    p.op = (char *)op_names[op];
    p.dtype = (TpsDtype)dtype;
    tps_measurements_add_strategy(m, &p);
    return TRUE;
}

/* A tile or cluster side: both 0 (not said) or both set. */
static gboolean
get_pair(const Item *it, const char *a, const char *b, guint max, guint *va, guint *vb)
{
    if (!get_guint(it, a, 0, max, va) || !get_guint(it, b, 0, max, vb))
        return FALSE;
    if ((*va == 0) != (*vb == 0))
        return tps_yaml_error(it->doc, tps_yaml_get(it->map, *va == 0 ? a : b), it->error,
                              "%s: %s and %s are both 0 (not known) or both set", it->where, a, b);
    return TRUE;
}

static gboolean
parse_gemm_algo(const Item *it, TpsMeasurements *m)
{
    TpsGemmAlgoPoint p = {0};
    guint dtype;
    guint64 algo;
    if (!get_uint(it, "m", 1, MAX_DIM, &p.m) || !get_uint(it, "n", 1, MAX_DIM, &p.n) ||
        !get_uint(it, "k", 1, MAX_DIM, &p.k) || !get_enum(it, "dtype", tps_dtype_names, &dtype) ||
        !get_uint(it, "algo", 0, G_MAXINT, &algo) ||
        !get_guint(it, "tile_id", 0, 1 << 20, &p.tile_id) ||
        !get_pair(it, "tile_m", "tile_n", 1024, &p.tile_m, &p.tile_n) ||
        !get_guint(it, "split_k", 1, 1024, &p.split_k) ||
        !get_pair(it, "cluster_m", "cluster_n", 64, &p.cluster_m, &p.cluster_n))
        return FALSE;
    p.dtype = (TpsDtype)dtype;
    p.algo = (gint)algo;
    g_array_append_val(m->gemm_algos, p);
    return TRUE;
}

typedef struct {
    const char *key;
    const char *const *item_keys;
    gboolean (*parse)(const Item *it, TpsMeasurements *m);
} Section;

static const Section sections[] = {
    {"collectives", coll_keys, parse_coll},
    {"copies", copy_keys, parse_copy},
    {"gemm", gemm_keys, parse_gemm},
    {"launch", launch_keys, parse_launch},
    {"overlap", overlap_keys, parse_overlap},
    {"strategies", strategy_keys, parse_strategy},
    {"gemm_algos", algo_keys, parse_gemm_algo},
};

static gboolean
parse_meta_string(const TpsYamlDoc *doc, const TpsYamlNode *root, const char *key, char **out,
                  GError **error)
{
    const TpsYamlNode *node = tps_yaml_get(root, key);
    const char *s;
    if (node == NULL)
        return TRUE;
    if (!tps_yaml_string(doc, node, key, &s, error))
        return FALSE;
    if (*out == NULL)
        *out = g_strdup(s);
    return TRUE;
}

static gboolean
parse_meta_uint(const TpsYamlDoc *doc, const TpsYamlNode *root, const char *key, guint *out,
                GError **error)
{
    const TpsYamlNode *node = tps_yaml_get(root, key);
    guint64 v;
    if (node == NULL)
        return TRUE;
    if (!tps_yaml_uint(doc, node, key, 1, 1 << 20, &v, error))
        return FALSE;
    if (*out == 0)
        *out = (guint)v;
    return TRUE;
}

static gboolean
parse_doc(const TpsYamlDoc *doc, TpsMeasurements *m, GError **error)
{
    const TpsYamlNode *root = doc->root;
    if (root == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:1:1: empty measurements file",
                    doc->file);
        return FALSE;
    }
    const gboolean empty_map = root->type == TPS_YAML_MAP && root->keys->len == 0;
    if ((!empty_map && !tps_yaml_check_kind(doc, root, "measurements", top_keys, error)) ||
        !tps_yaml_check_keys(doc, root, "the measurements file", top_keys, error))
        return FALSE;
    /* `{}` says no more than an empty file, and would be written back as
     * one (tps_measurements_format writes what there is). */
    if (root->keys->len == 0)
        return tps_yaml_error(doc, root, error, "empty measurements file");
    if (!parse_meta_string(doc, root, "source", &m->source, error) ||
        !parse_meta_string(doc, root, "gpu", &m->gpu, error) ||
        !parse_meta_string(doc, root, "cuda", &m->cuda, error) ||
        !parse_meta_string(doc, root, "nccl", &m->nccl, error) ||
        !parse_meta_uint(doc, root, "sms", &m->sms, error) ||
        !parse_meta_uint(doc, root, "gpus", &m->gpus, error))
        return FALSE;

    for (guint s = 0; s < G_N_ELEMENTS(sections); s++) {
        const Section *sec = &sections[s];
        const TpsYamlNode *seq = tps_yaml_get(root, sec->key);
        if (seq == NULL)
            continue;
        g_autofree char *what = g_strdup_printf("a sequence of %s points", sec->key);
        if (!tps_yaml_expect(doc, seq, TPS_YAML_SEQ, what, error))
            return FALSE;
        /* Written back, an empty section vanishes (issue 13, D13): a file of
         * `gemm: []` alone would load and its copy not. */
        if (seq->items->len == 0)
            return tps_yaml_error(doc, seq, error, "%s is empty; leave it out", sec->key);
        for (guint i = 0; i < seq->items->len; i++) {
            const TpsYamlNode *map = g_ptr_array_index(seq->items, i);
            g_autofree char *where = g_strdup_printf("%s[%u]", sec->key, i);
            g_autofree char *point = g_strdup_printf("a %s point", sec->key);
            if (!tps_yaml_expect(doc, map, TPS_YAML_MAP, point, error) ||
                !tps_yaml_check_keys(doc, map, where, sec->item_keys, error))
                return FALSE;
            Item it = {doc, map, where, error};
            if (!sec->parse(&it, m))
                return FALSE;
        }
    }
    return TRUE;
}

TpsGemmKernels *
tps_gemm_kernels_load(const char *path, const TpsHardware *hw, GError **error)
{
    g_return_val_if_fail(path != NULL && hw != NULL, NULL);
    g_autoptr(TpsMeasurements) meas = tps_measurements_new();
    if (!tps_measurements_file_load(path, meas, error))
        return NULL;
    if (meas->gemm_algos->len == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: no gemm_algos points (tpsim-gpubench --only algos writes them)", path);
        return NULL;
    }
    return tps_gemm_kernels_new(meas->gemm_algos, hw, path, error);
}

gboolean
tps_measurements_file_load(const char *path, TpsMeasurements *m, GError **error)
{
    g_return_val_if_fail(path != NULL && m != NULL, FALSE);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(path, error);
    return doc != NULL && parse_doc(doc, m, error);
}

gboolean
tps_measurements_file_load_string(const char *name, const char *text, gssize len,
                                  TpsMeasurements *m, GError **error)
{
    g_return_val_if_fail(name != NULL && text != NULL && m != NULL, FALSE);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string(name, text, len, error);
    return doc != NULL && parse_doc(doc, m, error);
}

/* --- From traces --- */

typedef struct {
    guint64 m, n, k;
    TpsDtype dtype;
    GArray *tflops; /* double */
} ShapeSamples;

/* One GEMM op invocation of a trace: its kernels' time and its shape. */
typedef struct {
    gint64 ns;
    gint64 m, n, k;
    TpsTraceDtype dtype; /* of its GEMM kernels; unknown if they disagree */
    gboolean typed;      /* a kernel with a known type was seen */
} OpSamples;

typedef struct {
    TpsMeasColl kind;
    double bytes;
    guint ranks;
    GArray *us; /* double */
} CollSamples;

static gboolean
meas_coll_kind(const char *collective, TpsMeasColl *kind)
{
    static const char *const names[TPS_MEAS_COLL_COUNT] = {"AllGather", "ReduceScatter",
                                                           "AllReduce", "SendRecv"};
    if (collective == NULL)
        return FALSE;
    for (guint i = 0; i < TPS_MEAS_COLL_COUNT; i++)
        if (strcmp(collective, names[i]) == 0) {
            *kind = (TpsMeasColl)i;
            return TRUE;
        }
    return FALSE;
}

/* Does [start, end) overlap an NCCL kernel of `device`? `nccl` is sorted by
 * start and no NCCL kernel lasts longer than `max_dur`, so only those that
 * start in [start - max_dur, end) can overlap: a binary search, then a short
 * scan back. */
static gboolean
overlaps_nccl(const GArray *nccl, gint64 max_dur, gint64 device, gint64 start, gint64 end)
{
    guint lo = 0, hi = nccl->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g_array_index(nccl, const TpsTraceKernel *, mid)->ts_ns < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (guint i = lo; i-- > 0;) {
        const TpsTraceKernel *k = g_array_index(nccl, const TpsTraceKernel *, i);
        if (k->ts_ns + max_dur <= start)
            break;
        if (k->device == device && start < k->ts_ns + k->dur_ns)
            return TRUE;
    }
    return FALSE;
}

static gint
compare_kernel_ptr_start(gconstpointer a, gconstpointer b)
{
    const TpsTraceKernel *x = *(const TpsTraceKernel *const *)a;
    const TpsTraceKernel *y = *(const TpsTraceKernel *const *)b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The NCCL kernels of a trace sorted by start, and the longest one's
 * duration in *max_dur. */
static GArray *
sorted_nccl_kernels(const TpsTraceKernel *kernels, guint n_kernels, gint64 *max_dur)
{
    GArray *nccl = g_array_new(FALSE, FALSE, sizeof(const TpsTraceKernel *));
    for (guint i = 0; i < n_kernels; i++)
        if (kernels[i].klass == TPS_KERNEL_NCCL) {
            const TpsTraceKernel *k = &kernels[i];
            g_array_append_val(nccl, k);
        }
    g_array_sort(nccl, compare_kernel_ptr_start);
    *max_dur = 0;
    for (guint i = 0; i < nccl->len; i++)
        *max_dur = MAX(*max_dur, g_array_index(nccl, const TpsTraceKernel *, i)->dur_ns);
    return nccl;
}

/* GEMM ops: (device, op_id) -> summed kernel time (an OpSamples); the
 * shape of the op. The GEMM kernels of known shape that no NCCL kernel of
 * their device overlaps count. */
static GHashTable *
gemm_ops(const TpsTraceKernel *kernels, guint n_kernels, const GArray *nccl, gint64 max_dur)
{
    GHashTable *ops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < n_kernels; i++) {
        const TpsTraceKernel *k = &kernels[i];
        if (k->klass != TPS_KERNEL_GEMM || k->m <= 0 || k->n <= 0 || k->k <= 0 || k->batch != 1 ||
            k->dur_ns <= 0)
            continue;
        if (overlaps_nccl(nccl, max_dur, k->device, k->ts_ns, k->ts_ns + k->dur_ns))
            continue;
        char *key = k->op_id >= 0 ? g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                                                    k->device, k->op_id)
                                  : g_strdup_printf("kernel/%u", i);
        OpSamples *acc = g_hash_table_lookup(ops, key);
        if (acc == NULL) {
            acc = g_new0(OpSamples, 1);
            acc->m = k->m;
            acc->n = k->n;
            acc->k = k->k;
            g_hash_table_insert(ops, key, acc);
        } else {
            g_free(key);
        }
        acc->ns += k->dur_ns;
        /* A split-K reduce says no type: the GEMM kernel beside it does. */
        if (k->dtype != TPS_TRACE_DTYPE_UNKNOWN) {
            if (acc->typed && acc->dtype != k->dtype)
                acc->dtype = TPS_TRACE_DTYPE_UNKNOWN;
            else if (!acc->typed)
                acc->dtype = k->dtype;
            acc->typed = TRUE;
        }
    }
    return ops;
}

/* The rates of the BF16 and FP16 GEMM ops, gathered by shape
 * (ShapeSamples); every op counted in use->gemm_ops by its type. */
static GArray *
gemm_shape_samples(GHashTable *ops, TpsTraceUse *use)
{
    GArray *shapes = g_array_new(FALSE, FALSE, sizeof(ShapeSamples));
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, ops);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        const OpSamples *acc = value;
        use->gemm_ops[acc->dtype]++;
        TpsDtype dtype;
        if (acc->dtype == TPS_TRACE_DTYPE_BF16)
            dtype = TPS_DTYPE_BF16;
        else if (acc->dtype == TPS_TRACE_DTYPE_FP16)
            dtype = TPS_DTYPE_FP16;
        else
            continue;
        double tflops =
            2.0 * (double)acc->m * (double)acc->n * (double)acc->k / (double)acc->ns / 1e3;
        guint s;
        for (s = 0; s < shapes->len; s++) {
            ShapeSamples *sh = &g_array_index(shapes, ShapeSamples, s);
            if (sh->m == (guint64)acc->m && sh->n == (guint64)acc->n && sh->k == (guint64)acc->k &&
                sh->dtype == dtype)
                break;
        }
        if (s == shapes->len) {
            ShapeSamples sh = {(guint64)acc->m, (guint64)acc->n, (guint64)acc->k, dtype,
                               g_array_new(FALSE, FALSE, sizeof(double))};
            g_array_append_val(shapes, sh);
        }
        g_array_append_val(g_array_index(shapes, ShapeSamples, s).tflops, tflops);
    }
    return shapes;
}

/* A GEMM point per shape, the median of its rates, in a fixed order (the
 * hash table's is not): by m, n, k. The samples are freed; returns the
 * number of points. */
static guint
add_gemm_points(GArray *shapes, TpsMeasurements *m, TpsTraceUse *use)
{
    guint added = 0;
    for (guint pass = 0; pass < shapes->len; pass++) {
        guint best = G_MAXUINT;
        for (guint s = 0; s < shapes->len; s++) {
            ShapeSamples *sh = &g_array_index(shapes, ShapeSamples, s);
            if (sh->tflops == NULL)
                continue;
            if (best == G_MAXUINT)
                best = s;
            ShapeSamples *b = &g_array_index(shapes, ShapeSamples, best);
            if (sh->m < b->m ||
                (sh->m == b->m &&
                 (sh->n < b->n ||
                  (sh->n == b->n && (sh->k < b->k || (sh->k == b->k && sh->dtype < b->dtype))))))
                best = s;
        }
        ShapeSamples *sh = &g_array_index(shapes, ShapeSamples, best);
        double tflops = tps_median((double *)(void *)sh->tflops->data, sh->tflops->len);
        TpsGemmPoint p = {sh->m, sh->n, sh->k, sh->dtype, 0, tflops};
        g_array_append_val(m->gemm, p);
        added++;
        use->gemm_points++;
        g_array_unref(sh->tflops);
        sh->tflops = NULL;
    }
    return added;
}

/* A collective point per kind, size and group of the NCCL kernels whose
 * message size and group are known, the median of their times. Kernels
 * are sorted by (device, stream, start), so points come out in order of
 * first appearance. Returns the number of points. */
static guint
add_collective_points(const TpsTraceKernel *kernels, guint n_kernels, TpsMeasurements *m,
                      TpsTraceUse *use)
{
    guint added = 0;
    GArray *colls = g_array_new(FALSE, FALSE, sizeof(CollSamples));
    for (guint i = 0; i < n_kernels; i++) {
        const TpsTraceKernel *k = &kernels[i];
        TpsMeasColl kind;
        if (k->klass != TPS_KERNEL_NCCL || k->bytes <= 0 || k->group_size < 2 || k->dur_ns <= 0 ||
            !meas_coll_kind(k->collective, &kind))
            continue;
        if (kind == TPS_MEAS_SEND_RECV && k->group_size != 2)
            continue;
        guint c;
        for (c = 0; c < colls->len; c++) {
            CollSamples *cs = &g_array_index(colls, CollSamples, c);
            if (cs->kind == kind && cs->bytes == (double)k->bytes && cs->ranks == k->group_size)
                break;
        }
        if (c == colls->len) {
            CollSamples cs = {kind, (double)k->bytes, k->group_size,
                              g_array_new(FALSE, FALSE, sizeof(double))};
            g_array_append_val(colls, cs);
        }
        double us = (double)k->dur_ns / 1e3;
        g_array_append_val(g_array_index(colls, CollSamples, c).us, us);
    }
    for (guint c = 0; c < colls->len; c++) {
        CollSamples *cs = &g_array_index(colls, CollSamples, c);
        double us = tps_median((double *)(void *)cs->us->data, cs->us->len);
        TpsCollPoint p = {cs->kind, cs->bytes, cs->ranks, us, FALSE};
        g_array_append_val(m->collectives, p);
        added++;
        use->coll_points++;
        g_array_unref(cs->us);
    }
    g_array_unref(colls);
    return added;
}

guint
tps_measurements_from_trace(const TpsTrace *trace, TpsMeasurements *m, TpsTraceUse *use)
{
    g_return_val_if_fail(trace != NULL && m != NULL, 0);
    guint n_kernels = 0;
    const TpsTraceKernel *kernels = tps_trace_kernels(trace, &n_kernels);
    guint added = 0;
    TpsTraceUse local;
    if (use == NULL)
        use = &local;
    memset(use, 0, sizeof *use);

    if (m->gpu == NULL && tps_trace_gpu_name(trace) != NULL)
        m->gpu = g_strdup(tps_trace_gpu_name(trace));
    if (m->sms == 0)
        m->sms = tps_trace_gpu_sms(trace);

    gint64 max_dur;
    GArray *nccl = sorted_nccl_kernels(kernels, n_kernels, &max_dur);
    GHashTable *ops = gemm_ops(kernels, n_kernels, nccl, max_dur);
    GArray *shapes = gemm_shape_samples(ops, use);
    g_hash_table_unref(ops);
    added += add_gemm_points(shapes, m, use);
    g_array_unref(shapes);
    added += add_collective_points(kernels, n_kernels, m, use);
    g_array_unref(nccl);
    return added;
}

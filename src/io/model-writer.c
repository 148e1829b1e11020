/* Hardware model writer: the sections and keys of io/model-file.c, in the
 * same order, one commented value per line. */
#include "io/model-writer.h"

#include "core/text.h"

#include <string.h>

typedef struct {
    GString *out;
    TpsModelCommentFn comment;
    gpointer user_data;
    const char *default_comment;
} Writer;

static void
end_line(Writer *w, const char *key)
{
    g_autofree char *text = w->comment ? w->comment(key, w->user_data) : NULL;
    const char *c = text ? text : w->default_comment;
    if (c != NULL) {
        g_string_append(w->out, "  # ");
        /* A comment is one line. */
        for (const char *p = c; *p; p++)
            g_string_append_c(w->out, *p == '\n' ? ' ' : *p);
    }
    g_string_append_c(w->out, '\n');
}

static void
append_double(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.6g", v));
}

static void
put_double(Writer *w, const char *indent, const char *section, const char *key, double v)
{
    g_autofree char *path = g_strdup_printf("%s.%s", section, key);
    g_string_append_printf(w->out, "%s%s: ", indent, key);
    append_double(w->out, v);
    end_line(w, path);
}

static void
put_uint(Writer *w, const char *section, const char *key, guint v)
{
    g_autofree char *path = g_strdup_printf("%s.%s", section, key);
    g_string_append_printf(w->out, "  %s: %u", key, v);
    end_line(w, path);
}

static void
put_protos(Writer *w, const char *section, const char *key, const double *v)
{
    static const char *const protos[TPS_PROTO_COUNT] = {"ll", "ll128", "simple"};
    g_string_append_printf(w->out, "  %s:\n", key);
    g_autofree char *sub = g_strdup_printf("%s.%s", section, key);
    for (guint p = 0; p < TPS_PROTO_COUNT; p++)
        put_double(w, "    ", sub, protos[p], v[p]);
}

char *
tps_model_write(const TpsHardware *hw, const char *header, TpsModelCommentFn comment,
                gpointer user_data, const char *default_comment)
{
    g_return_val_if_fail(hw != NULL && hw->name != NULL, NULL);
    Writer w = {g_string_new(NULL), comment, user_data, default_comment};

    if (header != NULL) {
        g_auto(GStrv) lines = g_strsplit(header, "\n", -1);
        for (guint i = 0; lines[i] != NULL; i++)
            g_string_append_printf(w.out, "#%s%s\n", *lines[i] ? " " : "", lines[i]);
    }
    g_string_append_printf(w.out, "name: %s\n", hw->name);

    g_string_append(w.out, "\ngpu:\n  name: ");
    tps_text_append_quoted(w.out, hw->gpu_name ? hw->gpu_name : "");
    end_line(&w, "gpu.name");
    put_uint(&w, "gpu", "sms", hw->sms);
    put_double(&w, "  ", "gpu", "clock_mhz", hw->clock_mhz);
    put_double(&w, "  ", "gpu", "memory_gib", hw->memory_gib);
    g_string_append(w.out, "  peak_tflops:\n");
    for (guint d = 0; d < TPS_DTYPE_COUNT; d++)
        put_double(&w, "    ", "gpu.peak_tflops", tps_dtype_names[d], hw->peak_tflops[d]);
    put_double(&w, "  ", "gpu", "hbm_gbps", hw->hbm_gbps);
    put_double(&w, "  ", "gpu", "hbm_efficiency", hw->hbm_efficiency);
    put_double(&w, "  ", "gpu", "sm_mem_gbps", hw->sm_mem_gbps);
    put_double(&w, "  ", "gpu", "launch_us", hw->launch_us);
    put_uint(&w, "gpu", "copy_engines", hw->copy_engines);

    g_string_append(w.out, "\ngemm:\n  tiles:\n");
    for (guint i = 0; i < hw->n_tiles; i++) {
        g_autofree char *key = g_strdup_printf("gemm.tiles.%u.efficiency", i);
        g_string_append_printf(w.out, "    - {m: %u, n: %u, efficiency: ", hw->tiles[i].m,
                               hw->tiles[i].n);
        append_double(w.out, hw->tiles[i].efficiency);
        g_string_append_c(w.out, '}');
        end_line(&w, key);
    }
    put_double(&w, "  ", "gemm", "k_overhead", hw->k_overhead);

    g_string_append(w.out, "\nattention:\n");
    put_double(&w, "  ", "attention", "flash_fwd_efficiency", hw->flash_fwd_efficiency);
    put_double(&w, "  ", "attention", "flash_bwd_efficiency", hw->flash_bwd_efficiency);

    g_string_append(w.out, "\nnode:\n");
    put_uint(&w, "node", "gpus", hw->gpus_per_node);
    put_double(&w, "  ", "node", "nvlink_gbps", hw->nvlink_gbps);
    put_double(&w, "  ", "node", "nvlink_efficiency", hw->nvlink_efficiency);
    put_double(&w, "  ", "node", "copy_engine_gbps", hw->copy_engine_gbps);

    g_string_append(w.out, "\nnetwork:\n");
    put_uint(&w, "network", "nics_per_node", hw->nics_per_node);
    put_double(&w, "  ", "network", "nic_gbps", hw->nic_gbps);
    put_double(&w, "  ", "network", "latency_us", hw->network_latency_us);

    g_string_append(w.out, "\nnccl:\n");
    put_uint(&w, "nccl", "channels", hw->nccl_channels);
    put_uint(&w, "nccl", "threads", hw->nccl_threads);
    put_protos(&w, "nccl", "base_latency_us", hw->nccl_base_latency_us);
    put_protos(&w, "nccl", "hw_latency_us", hw->nccl_hw_latency_us);
    put_protos(&w, "nccl", "net_latency_us", hw->nccl_net_latency_us);
    put_protos(&w, "nccl", "channel_gbps", hw->nccl_channel_gbps);
    put_protos(&w, "nccl", "proto_efficiency", hw->nccl_proto_efficiency);
    put_protos(&w, "nccl", "slot_bytes", hw->nccl_slot_bytes);
    return g_string_free(w.out, FALSE);
}

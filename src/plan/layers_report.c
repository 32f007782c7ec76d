/* Printing a layer table (see layers_report.h). */
#include "plan/layers_report.h"

void wp_layer_table_print(FILE *out, const struct wp_layer_table *t)
{
    fprintf(out, "%s: %d layers, profile batch %d%s\n", t->name, t->nlayers, t->profile_batch,
            t->profile_batch_assumed ? " (assumed)" : "");
    fprintf(out, "source: %s\n", t->source);
    fprintf(out, "%-4s %-28s %12s %12s %14s %14s %14s\n", "#", "layer", "forward_ms", "backward_ms", "activation_B",
            "parameter_B", "optimizer_B");
    for (int i = 0; i < t->nlayers; i++) {
        const struct wp_layer *l = &t->layers[i];
        fprintf(out, "%-4d %-28.28s %12.4f %12.4f %14.0f %14.0f %14.0f\n", i, l->name, 1e3 * l->forward_s,
                1e3 * l->backward_s, l->activation_bytes, l->parameter_bytes, l->optimizer_bytes);
    }
    fprintf(out, "total: forward %.4f ms, backward %.4f ms, parameters %.0f bytes, optimizer state %.0f bytes\n",
            1e3 * wp_layer_table_forward_s(t), 1e3 * wp_layer_table_backward_s(t), wp_layer_table_parameter_bytes(t),
            wp_layer_table_optimizer_bytes(t));
}

int wp_layer_table_print_and_write(FILE *out, const struct wp_layer_table *t, const char *path, struct wp_err *err)
{
    wp_layer_table_print(out, t);
    if (!path)
        return 0;
    if (wp_layer_table_write(path, t, err))
        return -1;
    fprintf(out, "wrote %s\n", path);
    return 0;
}

/* A GPT block on a tensor group (plan/tp_block.h) against closed forms:
 * Megatron-LM's four AllReduces of (N, C) per block (Narayanan et al.,
 * SC21, section 2.3), AutoDDL's per-matmul reduce and gather volumes
 * (plan/sbp.h) plus the LayerNorms' column gathers; the parameter count
 * the planner uses against the runtime's shards (run/model/gpt2_params.h), and
 * the shards themselves: every element of a split tensor in exactly one
 * piece, a replicated one whole in each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/tp_block.h"
#include "run/model/gpt2_params.h"
#include "tap.h"

static double sent_total(const struct wp_tp_block_volume *v)
{
    double s = 0;
    for (int c = 0; c < WP_TP_CALL_COUNT; c++)
        s += v->sent_elements[c];
    return s;
}

static void test_megatron(void)
{
    const double N = 4 * 1024, C = 1024;
    for (int t = 2; t <= 8; t *= 2) {
        struct wp_tp_block_volume v;
        wp_tp_block_volume(t, 1, N, (int)C, &v);
        ok(v.calls[WP_TP_ALL_REDUCE] == 4 && v.elements[WP_TP_ALL_REDUCE] == 4 * N * C,
           "tensor %d x 1: Megatron's two AllReduces of (N, C) forward and two backward", t);
        ok(v.calls[WP_TP_REDUCE_SCATTER_ROWS] + v.calls[WP_TP_ALL_GATHER_ROWS] + v.calls[WP_TP_ALL_GATHER_COLS] == 0,
           "tensor %d x 1: nothing else", t);
        is_near(v.sent_elements[WP_TP_ALL_REDUCE], 4 * 2.0 * (t - 1) / t * N * C, 1e-12,
                "tensor %d x 1: each rank sends 8 (t-1)/t N C elements by rings", t);
    }
}

/* AutoDDL's volumes (sbp.h) of the block's four matmuls: QKV and the
 * up-projection on (p0, p1, p2) reduced over axis 2, the projections on
 * (p0, p2, p1) gathering their input over axis 2 and reducing over axis 1,
 * QKV's and the up-projection's inputs gathered over axis 1; and the
 * LayerNorms' whole rows: four AllGathers of (N, C) over axis 2. */
static double autoddl_sent(int p1, int p2, double N, double C)
{
    double r2 = (p2 - 1.0) / p2, r1 = (p1 - 1.0) / p1;
    double reduce_ax2 = 2 * r2 * N * 3 * C / p1 + 2 * r2 * N * 4 * C / p1;
    double gather_ax2 = 2 * r2 * N * C / p1 + 2 * r2 * N * 4 * C / p1;
    double reduce_ax1 = 2 * (2 * r1 * N * C / p2);
    double gather_ax1 = 2 * (2 * r1 * N * C / p2);
    double layernorm_rows = 4 * r2 * N * C;
    return reduce_ax2 + gather_ax2 + reduce_ax1 + gather_ax1 + layernorm_rows;
}

static void test_autoddl(void)
{
    const int shapes[][2] = {{1, 2}, {2, 2}, {4, 2}, {1, 8}, {2, 4}, {8, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int p1 = shapes[i][0], p2 = shapes[i][1];
        struct wp_tp_block_volume v;
        wp_tp_block_volume(p1, p2, 2048, 768, &v);
        is_near(sent_total(&v), autoddl_sent(p1, p2, 2048, 768), 1e-12,
                "%d x %d: sent = AutoDDL's reduces and gathers of the four matmuls + the LayerNorms' rows", p1, p2);
        ok(v.calls[WP_TP_REDUCE_SCATTER_ROWS] == (p2 > 1 ? 4 : 0) && v.calls[WP_TP_ALL_GATHER_ROWS] == (p2 > 1 ? 4 : 0),
           "%d x %d: four ReduceScatters and four AllGathers of rows over axis 2", p1, p2);
    }
}

static const struct wp_gpt2_config G = {.layers = 2, .channels = 64, .heads = 4, .sequence_length = 8,
                                        .max_positions = 8, .vocabulary = 50};

static void test_shards(void)
{
    const int shapes[][2] = {{2, 1}, {1, 2}, {2, 2}, {4, 2}, {1, 4}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int p1 = shapes[k][0], p2 = shapes[k][1], all_ok = 1, count_ok = 1;
        for (int j1 = 0; j1 < p1; j1++)
            for (int j2 = 0; j2 < p2; j2++) {
                struct wp_tp_shard sh = {p1, p2, j1, j2};
                size_t block = 0;
                for (int i = 2; i < 2 + WP_BLOCK_TENSORS; i++)
                    block += wp_gpt2_shard_numel(&G, i, &sh);
                count_ok &= block == wp_tp_block_param_floats(p1, p2, G.channels);
            }
        ok(count_ok, "%d x %d: every rank's block holds wp_tp_block_param_floats floats (the planner's count)", p1, p2);
        for (int i = 0; i < wp_gpt2_tensor_count(G.layers); i++) {
            struct wp_tensor_desc d;
            wp_gpt2_tensor_desc(&G, i, &d);
            float *whole = malloc(d.numel * sizeof *whole), *back = calloc(d.numel, sizeof *back);
            float *piece = malloc(d.numel * sizeof *piece);
            int *covered = calloc(d.numel, sizeof *covered);
            for (size_t e = 0; e < d.numel; e++)
                whole[e] = (float)e;
            size_t pieces = 0;
            for (int j1 = 0; j1 < p1; j1++)
                for (int j2 = 0; j2 < p2; j2++) {
                    struct wp_tp_shard sh = {p1, p2, j1, j2};
                    size_t n = wp_gpt2_shard_copy(&G, i, &sh, whole, piece, 1);
                    all_ok &= n == wp_gpt2_shard_numel(&G, i, &sh);
                    pieces += n;
                    for (size_t e = 0; e < n; e++) /* each value is its own index in whole */
                        covered[(size_t)piece[e]]++;
                    memset(back, 0, d.numel * sizeof *back);
                    wp_gpt2_shard_copy(&G, i, &sh, back, piece, 0);
                    for (size_t e = 0; e < n; e++)
                        all_ok &= back[(size_t)piece[e]] == piece[e];
                }
            /* the copies of each element: 1 split over the group, p1 or p2 split over one axis, p1 p2 whole */
            size_t copies = pieces / d.numel;
            all_ok &= pieces % d.numel == 0 && (size_t)(p1 * p2) % copies == 0;
            for (size_t e = 0; e < d.numel; e++)
                all_ok &= (size_t)covered[e] == copies;
            free(whole);
            free(back);
            free(piece);
            free(covered);
        }
        ok(all_ok, "%d x %d: every tensor's pieces cover each element equally often (once when split over the "
                   "whole group), and go back where they came from", p1, p2);
    }
    struct wp_tp_shard sh = {2, 2, 1, 0};
    float whole[64 * 192], piece[32 * 96];
    for (int e = 0; e < 64 * 192; e++)
        whole[e] = (float)e;
    wp_gpt2_shard_copy(&G, wp_gpt2_tensor_index(G.layers, 0, WP_T_QKVW), &sh, whole, piece, 1);
    /* rank (1, 0) of 2 x 2: rows 0..31; columns 32..63 of q, 96..127 of k, 160..191 of v */
    ok(piece[0] == 32 && piece[32] == 96 && piece[64] == 160 && piece[96] == 192 + 32,
       "c_attn.weight's piece of rank (1, 0): its heads' columns of q, k and v, rows of axis 2's block 0");
}

static void test_checks(void)
{
    char why[160];
    ok(wp_tp_group_check(2, 2, 4, 64, 4, why, sizeof why) == 0, "2 x 2 splits 4 heads, 64 channels, 4 sequences");
    ok(wp_tp_group_check(8, 1, 4, 64, 4, why, sizeof why) != 0 && strstr(why, "heads"), "8 x 1 on 4 heads: %s", why);
    ok(wp_tp_group_check(1, 4, 4, 64, 2, why, sizeof why) != 0 && strstr(why, "sequences"),
       "1 x 4 on 2 sequences: %s", why);
    ok(wp_tp_group_check(1, 3, 4, 64, 3, why, sizeof why) != 0 && strstr(why, "channels"),
       "1 x 3 on 64 channels: %s", why);
}

int main(void)
{
    test_megatron();
    test_autoddl();
    test_shards();
    test_checks();
    return tap_done();
}

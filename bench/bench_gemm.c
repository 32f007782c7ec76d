/* Benchmark (not a test): the linked CBLAS's sgemm on the products of one
 * GPT-2-small training step (issue 16): B x T = 1024 rows, C = 768, the
 * blocks' four linear layers and the tied LM head (V = 50,257), each as the
 * three products of kernels/cpu/matmul.c (forward, dinp, dweight: its own
 * functions, so its transposes and beta). Prints the CBLAS the process
 * loaded (kernels/cpu/blas_library.c: which, its threading, its file),
 * seconds and GFLOP/s a call (best of REPEATS) and what one step's products
 * would take at these rates.
 * Threads: whatever the BLAS reads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
 * BLIS_NUM_THREADS); the runtime's own setting is not applied here.
 * Usage: bench_gemm [REPEATS [LAYERS]]   (defaults 3 and 12) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/cpu/cpu_kernels.h"

#define ROWS 1024 /* B x T: batch 4 x 256 tokens */
#define CHANNELS 768
#define VOCABULARY 50257

struct product {
    const char *name;
    int in, out; /* the layer's input and output widths */
    int per_step; /* calls a step: layers for the blocks, 1 for the head */
    int out_in;   /* weight stored (out, in): the tied LM head */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    return p;
}

/* One of the three products of matmul.c's kernels for layer p, by index:
 * 0 forward out = inp W, 1 dinp += dout W^T, 2 dW += inp^T dout (in the
 * weight's layout); no bias, so each is one sgemm. */
static void call(const struct product *p, int which, const float *inp, const float *w, float *out,
                 const float *dout, float *dinp, float *dw)
{
    const enum wp_weight_layout layout = p->out_in ? WP_WEIGHT_OUT_IN : WP_WEIGHT_IN_OUT;
    if (which == 0)
        wp_cpu_matmul_forward(out, inp, w, NULL, ROWS, p->in, p->out, layout);
    else
        wp_cpu_matmul_backward(which == 1 ? dinp : NULL, which == 2 ? dw : NULL, NULL, dout, inp, w, ROWS, p->in,
                               p->out, layout);
}

int main(int argc, char **argv)
{
    const int repeats = argc > 1 ? atoi(argv[1]) : 3;
    const int layers = argc > 2 ? atoi(argv[2]) : 12;
    if (repeats < 1 || layers < 0) {
        fprintf(stderr, "usage: bench_gemm [REPEATS [LAYERS]]\n");
        return 2;
    }
    const struct product products[] = {
        {"qkv", CHANNELS, 3 * CHANNELS, layers, 0},     {"attproj", CHANNELS, CHANNELS, layers, 0},
        {"fc", CHANNELS, 4 * CHANNELS, layers, 0},      {"fcproj", 4 * CHANNELS, CHANNELS, layers, 0},
        {"lm_head", CHANNELS, VOCABULARY, 1, 1},
    };
    const char *call_names[3] = {"forward", "dinp", "dweight"};
    const char *call_ops[2][3] = {{"NN", "NT", "TN"}, {"NT", "NN", "TN"}};

    char blas[512];
    wp_cpu_blas_describe(blas, sizeof blas);
    printf("# CBLAS: %s\n", blas);
    const char *env[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS"};
    printf("# threads:");
    for (int i = 0; i < 3; i++)
        printf(" %s=%s", env[i], getenv(env[i]) ? getenv(env[i]) : "(unset)");
    printf("\n# %d rows (B x T), best of %d calls each; step: %d layers and the LM head\n", ROWS, repeats, layers);
    printf("%-8s %-7s %-2s %6s %6s %6s %9s %8s\n", "product", "call", "op", "M", "N", "K", "s", "GFLOP/s");

    double step_s = 0.0, step_gflop = 0.0;
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        const struct product *p = &products[i];
        if (p->per_step == 0)
            continue;
        const size_t in_n = (size_t)ROWS * p->in, out_n = (size_t)ROWS * p->out, w_n = (size_t)p->in * p->out;
        float *inp = filled(in_n, 1), *w = filled(w_n, 2), *out = filled(out_n, 3), *dout = filled(out_n, 4);
        float *dinp = filled(in_n, 5), *dw = filled(w_n, 6);
        const double gflop = 2.0 * ROWS * p->in * p->out * 1e-9;
        for (int which = 0; which < 3; which++) {
            call(p, which, inp, w, out, dout, dinp, dw); /* warm-up: packing buffers, thread start */
            double best = 1e30;
            for (int r = 0; r < repeats; r++) {
                const double t0 = now_s();
                call(p, which, inp, w, out, dout, dinp, dw);
                const double t = now_s() - t0;
                best = t < best ? t : best;
            }
            /* M, N, K of the call as matmul.c passes them */
            int M = ROWS, N = p->out, K = p->in;
            if (which == 1)
                N = p->in, K = p->out;
            else if (which == 2)
                M = p->out_in ? p->out : p->in, N = p->out_in ? p->in : p->out, K = ROWS;
            printf("%-8s %-7s %-2s %6d %6d %6d %9.4f %8.1f\n", p->name, call_names[which], call_ops[p->out_in][which],
                   M, N, K, best, gflop / best);
            step_s += best * p->per_step;
            step_gflop += gflop * p->per_step;
        }
        free(inp), free(w), free(out), free(dout), free(dinp), free(dw);
    }
    printf("step's products: %.1f GFLOP in %.3f s at these rates: %.1f GFLOP/s\n", step_gflop, step_s,
           step_gflop / step_s);
    return 0;
}

/* Softmax + cross-entropy (CPU): probs (N,V), losses (N) = -log probs[target],
 * and the fused backward dlogits += (probs - onehot) * dloss, per row. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/elementwise_math.h"

#include <math.h>

/* probs (N,V) = softmax(logits (N,V)) with the row max subtracted; losses (N)
 * = -log probs[target] = log(sum exp(l - max)) - (l[target] - max), in double
 * (finite even when probs[target] underflows) */
void wp_cpu_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N,
                                 int V)
{
#pragma omp parallel for schedule(static) if ((size_t)N * V >= WP_CPU_PAR_MIN)
    for (int r = 0; r < N; r++) {
        const float *l = logits + (size_t)r * V;
        float *p = probs + (size_t)r * V;
        float maxval = l[0];
        for (int i = 1; i < V; i++)
            if (l[i] > maxval)
                maxval = l[i];
#pragma omp simd
        for (int i = 0; i < V; i++)
            p[i] = wp_fast_expf(l[i] - maxval);
        double sum = 0.0;
        for (int i = 0; i < V; i++)
            sum += p[i];
        const float inv = (float)(1.0 / sum);
        for (int i = 0; i < V; i++)
            p[i] *= inv;
        losses[r] = (float)(log(sum) - (double)(l[targets[r]] - maxval));
    }
}

/* dlogits (N,V) += (probs - onehot(targets)) * dloss */
void wp_cpu_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                  int V)
{
#pragma omp parallel for schedule(static) if ((size_t)N * V >= WP_CPU_PAR_MIN)
    for (int r = 0; r < N; r++) {
        const float *p = probs + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        const int ix = targets[r];
        for (int i = 0; i < V; i++) {
            const float indicator = i == ix ? 1.0f : 0.0f;
            d[i] += (p[i] - indicator) * dloss;
        }
    }
    wp_cpu_store(dlogits, (size_t)N * V);
}

/* Causal multi-head self-attention (CUDA), llm.c's algorithm: forward one
 * thread per (b, t, h), backward one thread per row, then per position.
 * The same math as kernels/cpu/attention.c, which now runs the four
 * products through CBLAS per (batch, head); moving these to
 * cublasSgemmStridedBatched keeps the siblings in step and is next (it
 * needs a GPU to check). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

#include <float.h>

/* inp (B,T,3C) = q,k,v; out (B,T,C); preatt, att (B,NH,T,T), entries t2 > t
 * zero. One thread per (b, t, h), the CPU's four passes in the same order. */
static __global__ void attention_forward_kernel(float *out, float *preatt, float *att, const float *inp, int B,
                                                int T, int C, int NH)
{
    const size_t C3 = (size_t)C * 3;
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;
    const size_t total = (size_t)B * T * NH;

    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int h = (int)(idx % NH);
        const int t = (int)((idx / NH) % T);
        const size_t b = idx / ((size_t)NH * T);
        const float *query_t = inp + (b * T + t) * C3 + (size_t)h * hs;
        const size_t row = (b * NH + h) * TT + (size_t)t * T;
        float *preatt_bth = preatt + row;
        float *att_bth = att + row;

        /* pass 1: q . k * scale and the max */
        float maxval = -FLT_MAX;
        for (int t2 = 0; t2 <= t; t2++) {
            const float *key_t2 = inp + (b * T + t2) * C3 + (size_t)h * hs + C;
            float val = 0.0f;
            for (int i = 0; i < hs; i++)
                val += query_t[i] * key_t2[i];
            val *= scale;
            if (val > maxval)
                maxval = val;
            preatt_bth[t2] = val;
        }

        /* pass 2: exp and its sum */
        float expsum = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
            const float expv = expf(preatt_bth[t2] - maxval);
            expsum += expv;
            att_bth[t2] = expv;
        }
        const float expsum_inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;

        /* pass 3: normalize; the masked future is zero */
        for (int t2 = 0; t2 <= t; t2++)
            att_bth[t2] *= expsum_inv;
        for (int t2 = t + 1; t2 < T; t2++) {
            att_bth[t2] = 0.0f;
            preatt_bth[t2] = 0.0f;
        }

        /* pass 4: weighted sum of the values (per output element, t2 in order) */
        float *out_bth = out + (b * T + t) * C + (size_t)h * hs;
        for (int i = 0; i < hs; i++) {
            float o = 0.0f;
            for (int t2 = 0; t2 <= t; t2++)
                o += att_bth[t2] * inp[(b * T + t2) * C3 + (size_t)h * hs + 2 * (size_t)C + i];
            out_bth[i] = o;
        }
    }
}

/* Backward, step 1: datt and dpreatt (B,NH,T,T), written whole (t2 > t zero).
 * One thread per (b, h, t) row; the CPU's backward of passes 4 (datt only)
 * and 2-3 (softmax). */
static __global__ void attention_backward_scores_kernel(float *dpreatt, float *datt, const float *dout,
                                                        const float *inp, const float *att, int B, int T, int C,
                                                        int NH)
{
    const size_t C3 = (size_t)C * 3;
    const int hs = C / NH;
    const size_t TT = (size_t)T * T;
    const size_t total = (size_t)B * NH * T;

    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int t = (int)(idx % T);
        const int h = (int)((idx / T) % NH);
        const size_t b = idx / ((size_t)T * NH);
        const size_t row = (b * NH + h) * TT + (size_t)t * T;
        const float *att_bth = att + row;
        float *datt_bth = datt + row;
        float *dpreatt_bth = dpreatt + row;
        const float *dout_bth = dout + (b * T + t) * C + (size_t)h * hs;

        /* backward of pass 4, the value accumulation: datt */
        for (int t2 = 0; t2 <= t; t2++) {
            const float *value_t2 = inp + (b * T + t2) * C3 + (size_t)h * hs + 2 * (size_t)C;
            float d = 0.0f;
            for (int i = 0; i < hs; i++)
                d += value_t2[i] * dout_bth[i];
            datt_bth[t2] = d;
        }

        /* backward of passes 2 and 3, the softmax:
         * dpreatt[t3] = att[t3] * (datt[t3] - sum_t2 att[t2] datt[t2]) */
        float dot = 0.0f;
        for (int t2 = 0; t2 <= t; t2++)
            dot += att_bth[t2] * datt_bth[t2];
        for (int t3 = 0; t3 <= t; t3++)
            dpreatt_bth[t3] = att_bth[t3] * (datt_bth[t3] - dot);
        for (int t2 = t + 1; t2 < T; t2++) {
            datt_bth[t2] = 0.0f;
            dpreatt_bth[t2] = 0.0f;
        }
    }
}

/* Backward, step 2: dinp (B,T,3C) +=. One thread per (b, t, h) owns the q, k
 * and v slices of head h at position t: dq[t] gathers over t2 <= t, dk[t] and
 * dv[t] over the later positions t' >= t (the CPU scatters from t' into them,
 * t' in order; gathering in that same order adds the same terms in the same
 * order, with no atomics). */
static __global__ void attention_backward_inp_kernel(float *dinp, const float *dpreatt, const float *dout,
                                                     const float *inp, const float *att, int B, int T, int C,
                                                     int NH)
{
    const size_t C3 = (size_t)C * 3;
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;
    const size_t total = (size_t)B * T * NH;

    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int h = (int)(idx % NH);
        const int t = (int)((idx / NH) % T);
        const size_t b = idx / ((size_t)NH * T);
        const size_t head = (b * NH + h) * TT; /* (b, h) slice of att, dpreatt */
        const size_t qkv_t = (b * T + t) * C3 + (size_t)h * hs;
        float *dquery_t = dinp + qkv_t;
        float *dkey_t = dinp + qkv_t + C;
        float *dvalue_t = dinp + qkv_t + 2 * (size_t)C;

        for (int i = 0; i < hs; i++) {
            /* backward of pass 1 into q at t: dq[t] += sum_{t2 <= t} k[t2] * dpreatt[t][t2] * scale */
            float dq = dquery_t[i];
            for (int t2 = 0; t2 <= t; t2++) {
                const float ds = dpreatt[head + (size_t)t * T + t2] * scale;
                dq += inp[(b * T + t2) * C3 + (size_t)h * hs + C + i] * ds;
            }
            dquery_t[i] = dq;

            /* backward of pass 1 into k at t: dk[t] += sum_{t' >= t} q[t'] * dpreatt[t'][t] * scale,
             * backward of pass 4 into v at t: dv[t] += sum_{t' >= t} att[t'][t] * dout[t'] */
            float dk = dkey_t[i], dv = dvalue_t[i];
            for (int tq = t; tq < T; tq++) {
                const size_t at = head + (size_t)tq * T + t;
                const float ds = dpreatt[at] * scale;
                dk += inp[(b * T + tq) * C3 + (size_t)h * hs + i] * ds;
                dv += att[at] * dout[(b * T + tq) * C + (size_t)h * hs + i];
            }
            dkey_t[i] = dk;
            dvalue_t[i] = dv;
        }
    }
}

extern "C" void wp_cuda_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                                          int C, int NH)
{
    const size_t total = (size_t)B * T * NH;
    if (total == 0)
        return;
    attention_forward_kernel<<<wp_cuda_grid(total, WP_CUDA_BLOCK), WP_CUDA_BLOCK>>>(out, preatt, att, inp, B, T, C,
                                                                                     NH);
    WP_CUDA_CHECK(cudaGetLastError());
}

/* dinp (B,T,3C) +=; dpreatt, datt (B,NH,T,T) scratch, written whole here
 * (step 2 reads dpreatt after step 1 wrote it: same stream, in order) */
extern "C" void wp_cuda_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                                           const float *inp, const float *att, int B, int T, int C, int NH)
{
    const size_t total = (size_t)B * T * NH;
    if (total == 0)
        return;
    const unsigned int blocks = wp_cuda_grid(total, WP_CUDA_BLOCK);
    attention_backward_scores_kernel<<<blocks, WP_CUDA_BLOCK>>>(dpreatt, datt, dout, inp, att, B, T, C, NH);
    WP_CUDA_CHECK(cudaGetLastError());
    attention_backward_inp_kernel<<<blocks, WP_CUDA_BLOCK>>>(dinp, dpreatt, dout, inp, att, B, T, C, NH);
    WP_CUDA_CHECK(cudaGetLastError());
}

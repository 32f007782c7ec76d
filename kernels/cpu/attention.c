/* Causal multi-head self-attention (CPU), llm.c's algorithm: forward
 * parallel over (b, t, h), backward parallel over (b, h) with t in order. */
#include "kernels/cpu/cpu_kernels.h"

#include <float.h>
#include <math.h>

/* inp (B,T,3C) = q,k,v; out (B,T,C); preatt, att (B,NH,T,T), entries t2 > t zero */
void wp_cpu_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T, int C,
                              int NH)
{
    const size_t C3 = (size_t)C * 3;
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;

#pragma omp parallel for collapse(3) schedule(static) if ((size_t)B * T * T * C >= WP_CPU_PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *query_t = inp + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                const size_t row = ((size_t)b * NH + h) * TT + (size_t)t * T;
                float *preatt_bth = preatt + row;
                float *att_bth = att + row;

                /* pass 1: q . k * scale and the max */
                float maxval = -FLT_MAX;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *key_t2 = inp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + C;
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

                /* pass 4: weighted sum of the values */
                float *out_bth = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int i = 0; i < hs; i++)
                    out_bth[i] = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *value_t2 = inp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + 2 * (size_t)C;
                    const float a = att_bth[t2];
                    for (int i = 0; i < hs; i++)
                        out_bth[i] += a * value_t2[i];
                }
            }
        }
    }
}

/* dinp (B,T,3C) +=; dpreatt, datt (B,NH,T,T) scratch, written whole here.
 * Every (b, h) owns its head's slice of dinp (dk, dv of position t2 collect
 * from every t >= t2), so (b, h) run in parallel and t in order. */
void wp_cpu_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout, const float *inp,
                               const float *att, int B, int T, int C, int NH)
{
    const size_t C3 = (size_t)C * 3;
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;

#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * T * T * C >= WP_CPU_PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const size_t row = ((size_t)b * NH + h) * TT + (size_t)t * T;
                const float *att_bth = att + row;
                float *datt_bth = datt + row;
                float *dpreatt_bth = dpreatt + row;
                const float *query_t = inp + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                float *dquery_t = dinp + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                const float *dout_bth = dout + ((size_t)b * T + t) * C + (size_t)h * hs;

                /* backward of pass 4, the value accumulation */
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *value_t2 = inp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + 2 * (size_t)C;
                    float *dvalue_t2 = dinp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + 2 * (size_t)C;
                    const float a = att_bth[t2];
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        d += value_t2[i] * dout_bth[i];
                        dvalue_t2[i] += a * dout_bth[i];
                    }
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

                /* backward of pass 1, the q . k product */
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *key_t2 = inp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + C;
                    float *dkey_t2 = dinp + ((size_t)b * T + t2) * C3 + (size_t)h * hs + C;
                    const float ds = dpreatt_bth[t2] * scale;
                    for (int i = 0; i < hs; i++) {
                        dquery_t[i] += key_t2[i] * ds;
                        dkey_t2[i] += query_t[i] * ds;
                    }
                }
            }
        }
    }
}

/* The alpha-beta cost of collectives and its least-squares fit (see
 * calibrate_fit.h). The two columns of the design matrix differ in scale by
 * up to ten orders of magnitude (steps vs bytes), so they are normalised and
 * the system is solved by a two-column QR (modified Gram-Schmidt), not by
 * the normal equations. */
#include "topo/calibrate_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

/* Below this, the bytes column is (numerically) a multiple of the steps
 * column: no amount of data separates latency from bandwidth. */
#define COLLINEAR_TOLERANCE 1e-9

struct wp_ab_coeffs wp_coll_cost_coeffs(enum wp_collective coll, int ranks, double bytes)
{
    return (struct wp_ab_coeffs){wp_collective_messages(coll, ranks), wp_collective_sent_bytes(coll, ranks, bytes)};
}

double wp_ab_predict(const struct wp_ab_fit *fit, const struct wp_calib_sample *s)
{
    struct wp_ab_coeffs k = wp_coll_cost_coeffs(s->coll, s->ranks, s->bytes);
    return k.alpha_coeff * fit->alpha_s + k.beta_bytes * fit->beta_s_per_byte;
}

static int check_sample(const struct wp_calib_sample *s, int i, struct wp_err *err)
{
    char size[32];
    if (s->coll < 0 || s->coll >= WP_COLL_COUNT)
        return wp_errorf(err, "sample %d: unknown collective %d", i, (int)s->coll);
    if (s->coll == WP_COLL_P2P && s->ranks != 2)
        return wp_errorf(err, "sample %d (p2p): %d ranks, but a message is between exactly 2", i, s->ranks);
    if (s->ranks < 2)
        return wp_errorf(err, "sample %d (%s): %d rank, but a collective needs at least 2", i,
                         wp_collective_name(s->coll), s->ranks);
    if (!(s->bytes > 0) || !isfinite(s->bytes))
        return wp_errorf(err, "sample %d (%s, %d ranks): message size %g bytes must be positive", i,
                         wp_collective_name(s->coll), s->ranks, s->bytes);
    if (!(s->time_s > 0) || !isfinite(s->time_s))
        return wp_errorf(err, "sample %d (%s, %d ranks, %s): time %g s must be positive and finite",
                         i, wp_collective_name(s->coll), s->ranks, wp_format_bytes(s->bytes, size, sizeof size),
                         s->time_s);
    return 0;
}

/* Fills the residual statistics of fit over the samples. */
static void residuals(const struct wp_calib_sample *samples, int n, struct wp_ab_fit *fit)
{
    double sum_sq = 0, max_rel = 0;
    for (int i = 0; i < n; i++) {
        double r = samples[i].time_s - wp_ab_predict(fit, &samples[i]);
        sum_sq += r * r;
        if (fabs(r) / samples[i].time_s > max_rel)
            max_rel = fabs(r) / samples[i].time_s;
    }
    fit->nsamples = n;
    fit->rms_residual_s = sqrt(sum_sq / n);
    fit->max_rel_residual = max_rel;
}

int wp_ab_fit(const struct wp_calib_sample *samples, int n, struct wp_ab_fit *fit, struct wp_err *err)
{
    if (n < 2)
        return wp_errorf(err, "%d measurement%s: fitting latency and bandwidth needs at least 2", n,
                         n == 1 ? "" : "s");
    for (int i = 0; i < n; i++)
        if (check_sample(&samples[i], i, err))
            return -1;
    double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    if (!a || !b) {
        free(a);
        free(b);
        return wp_errorf(err, "out of memory");
    }
    double norm_a = 0, norm_b = 0;
    for (int i = 0; i < n; i++) {
        struct wp_ab_coeffs k = wp_coll_cost_coeffs(samples[i].coll, samples[i].ranks, samples[i].bytes);
        a[i] = k.alpha_coeff;
        b[i] = k.beta_bytes;
        norm_a += a[i] * a[i];
        norm_b += b[i] * b[i];
    }
    norm_a = sqrt(norm_a);
    norm_b = sqrt(norm_b);
    /* Q = [q1 q2], R = [[r11 r12], [0 r22]] on the normalised columns:
     * q1 = a/|a| (r11 = 1), r12 = q1.(b/|b|), q2 = (b/|b| - r12 q1) / r22. */
    double r12 = 0;
    for (int i = 0; i < n; i++)
        r12 += (a[i] / norm_a) * (b[i] / norm_b);
    double r22 = 0;
    for (int i = 0; i < n; i++) {
        double w = b[i] / norm_b - r12 * a[i] / norm_a;
        r22 += w * w;
    }
    r22 = sqrt(r22);
    int status = 0;
    if (r22 < COLLINEAR_TOLERANCE) {
        status = wp_errorf(err, "the %d measurements cannot tell latency from bandwidth: every one "
                                "moves the same bytes per latency step (measure several message sizes)",
                           n);
    } else {
        double c1 = 0, c2 = 0; /* Q^T t */
        for (int i = 0; i < n; i++) {
            double q1 = a[i] / norm_a;
            double q2 = (b[i] / norm_b - r12 * q1) / r22;
            c1 += q1 * samples[i].time_s;
            c2 += q2 * samples[i].time_s;
        }
        double y2 = c2 / r22, y1 = c1 - r12 * y2;
        struct wp_ab_fit f = {y1 / norm_a, y2 / norm_b, 0, 0, 0, 0};
        if (f.alpha_s < 0) {
            /* the constrained optimum lies on alpha = 0: beta alone */
            double bt = 0, bb = 0;
            for (int i = 0; i < n; i++) {
                bt += b[i] * samples[i].time_s;
                bb += b[i] * b[i];
            }
            f.alpha_s = 0;
            f.beta_s_per_byte = bt / bb;
            f.alpha_clamped = 1;
        }
        if (!(f.beta_s_per_byte > 0))
            status = wp_errorf(err, "the measured times do not grow with the message size (fitted "
                                    "beta %g s/byte): measure larger messages",
                               f.beta_s_per_byte);
        else {
            residuals(samples, n, &f);
            *fit = f;
        }
    }
    free(a);
    free(b);
    return status;
}

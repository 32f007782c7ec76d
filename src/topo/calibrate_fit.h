/* The alpha-beta model of point-to-point messages and ring collectives
 * (AutoDDL Table 2) and its least-squares fit: from timed operations of one
 * link level, the latency alpha (s) and the inverse bandwidth beta (s/byte). */
#ifndef WP_TOPO_CALIBRATE_FIT_H
#define WP_TOPO_CALIBRATE_FIT_H

#include "topo/collective_cost.h"
#include "util/error.h"

/* A sample's model time = alpha_coeff * alpha + beta_bytes * beta, the
 * ring algorithms' step counts and bytes sent per rank
 * (topo/collective_cost.h):
 *   p2p            alpha + n beta
 *   allreduce      2(p-1) alpha + 2(p-1)/p n beta
 *   allgather, reducescatter, alltoall   (p-1) alpha + (p-1)/p n beta */
struct wp_ab_coeffs {
    double alpha_coeff;
    double beta_bytes;
};
struct wp_ab_coeffs wp_coll_cost_coeffs(enum wp_collective coll, int ranks, double bytes);

/* One measured operation. */
struct wp_calib_sample {
    enum wp_collective coll;
    int ranks;
    double bytes;
    double time_s;
};

struct wp_ab_fit {
    double alpha_s;          /* latency */
    double beta_s_per_byte;  /* inverse bandwidth */
    int alpha_clamped;       /* the unconstrained alpha was negative: fitted with alpha = 0 */
    int nsamples;
    double rms_residual_s;   /* root mean square of time - model */
    double max_rel_residual; /* largest |time - model| / time */
};

/* Least squares of time_s on the model's two coefficients over every
 * sample, with alpha >= 0 (a negative latency, noise on a fast link, is
 * refitted as 0). Errors, with nothing written to fit: fewer than two
 * samples; a sample with ranks < 2 (p2p: other than 2), bytes <= 0 or a
 * time that is not positive and finite; samples that cannot tell alpha from
 * beta (every one with the same bytes per latency step); beta <= 0 (times
 * that do not grow with the message size). */
int wp_ab_fit(const struct wp_calib_sample *samples, int nsamples, struct wp_ab_fit *fit,
              struct wp_err *err);

/* The model's time for a sample under fit. */
double wp_ab_predict(const struct wp_ab_fit *fit, const struct wp_calib_sample *sample);

#endif

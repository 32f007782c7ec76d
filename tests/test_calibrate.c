/* The alpha-beta model and its least-squares fit (topo/calibrate_fit.c):
 * AutoDDL's coefficients and nccl-tests' bus bandwidth factors, exact
 * recovery of known alpha and beta from synthetic times, a negative latency
 * clamped to 0, and each kind of degenerate input refused with its message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "topo/calibrate_fit.h"

#define MAX_SAMPLES 512

/* Every collective on ranks 2, 4 and 8 (p2p on 2) at min_bytes .. 64 MiB
 * (times 4), timed exactly by the model. */
static int synthetic(struct wp_calib_sample *s, double min_bytes, double alpha, double beta)
{
    static const int ranks[] = {2, 4, 8};
    int n = 0;
    for (int c = 0; c < WP_COLL_COUNT; c++)
        for (int r = 0; r < 3; r++) {
            if (c == WP_COLL_P2P && ranks[r] != 2)
                continue;
            for (double bytes = min_bytes; bytes <= 64.0 * 1024 * 1024; bytes *= 4) {
                s[n] = (struct wp_calib_sample){(enum wp_collective)c, ranks[r], bytes, 0};
                struct wp_ab_coeffs k = wp_coll_cost_coeffs(s[n].coll, s[n].ranks, bytes);
                s[n].time_s = k.alpha_coeff * alpha + k.beta_bytes * beta;
                n++;
            }
        }
    return n;
}

static void test_model(void)
{
    for (int c = 0; c < WP_COLL_COUNT; c++)
        is_int(wp_collective_from_name(wp_collective_name((enum wp_collective)c)), c, "%s names itself",
               wp_collective_name((enum wp_collective)c));
    is_int(wp_collective_from_name("broadcast"), -1, "an unknown collective is -1");

    struct wp_ab_coeffs k = wp_coll_cost_coeffs(WP_COLL_ALLREDUCE, 4, 1000);
    is_near(k.alpha_coeff, 6, 0, "allreduce on 4: 2(p-1) = 6 latency steps");
    is_near(k.beta_bytes, 1500, 1e-15, "allreduce on 4: 2(p-1)/p n = 1500 bytes");
    for (int c = WP_COLL_ALLGATHER; c <= WP_COLL_ALLTOALL; c++) {
        k = wp_coll_cost_coeffs((enum wp_collective)c, 4, 1000);
        ok(k.alpha_coeff == 3 && fabs(k.beta_bytes - 750) < 1e-12, "%s on 4: (p-1) = 3 steps, (p-1)/p n = 750 bytes",
           wp_collective_name((enum wp_collective)c));
    }
    k = wp_coll_cost_coeffs(WP_COLL_P2P, 2, 1000);
    ok(k.alpha_coeff == 1 && k.beta_bytes == 1000, "p2p: alpha + n beta");

    is_near(wp_collective_busbw_factor(WP_COLL_ALLREDUCE, 8), 1.75, 1e-15, "busbw allreduce on 8: 2(n-1)/n");
    is_near(wp_collective_busbw_factor(WP_COLL_ALLGATHER, 8), 0.875, 1e-15, "busbw allgather on 8: (n-1)/n");
    is_near(wp_collective_busbw_factor(WP_COLL_REDUCE_SCATTER, 4), 0.75, 1e-15, "busbw reducescatter on 4: (n-1)/n");
    is_near(wp_collective_busbw_factor(WP_COLL_ALLTOALL, 2), 0.5, 1e-15, "busbw alltoall on 2: (n-1)/n");
    is_near(wp_collective_busbw_factor(WP_COLL_P2P, 2), 1, 0, "busbw p2p: 1");
}

static void test_exact_recovery(void)
{
    static const double cases[][2] = {
        {2e-6, 1.0 / 12.5e9}, /* intra-node: 2 us, 12.5 GB/s */
        {50e-6, 1.0 / 25e6},  /* a shaped 200 Mbit/s link, 50 us */
        {1.5e-6, 1.0 / 25e9}, /* InfiniBand HDR */
        {0, 1.0 / 1e9},       /* no latency at all */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wp_calib_sample s[MAX_SAMPLES];
        int n = synthetic(s, 1024, cases[i][0], cases[i][1]);
        struct wp_ab_fit fit;
        struct wp_err err = {""};
        int rc = wp_ab_fit(s, n, &fit, &err);
        is_int(rc, 0, "case %zu: %d exact samples fit", i, n);
        if (rc) {
            printf("# %s\n", err.msg);
            continue;
        }
        is_near(fit.alpha_s, cases[i][0], 1e-9, "case %zu: alpha %g s recovered", i, cases[i][0]);
        is_near(fit.beta_s_per_byte, cases[i][1], 1e-9, "case %zu: beta %g s/B recovered", i, cases[i][1]);
        is_int(fit.nsamples, n, "case %zu: every sample counted", i);
        ok(fit.max_rel_residual < 1e-9, "case %zu: residuals vanish (max relative %g)", i, fit.max_rel_residual);
        ok(!fit.alpha_clamped || cases[i][0] == 0, "case %zu: no clamping of a positive alpha", i);
    }

    /* the smallest useful input: one collective at two sizes */
    struct wp_calib_sample two[2] = {{WP_COLL_ALLGATHER, 2, 4096, 0}, {WP_COLL_ALLGATHER, 2, 1 << 20, 0}};
    for (int i = 0; i < 2; i++)
        two[i].time_s = 1e-5 + 0.5 * two[i].bytes * 4e-9;
    struct wp_ab_fit fit;
    struct wp_err err = {""};
    is_int(wp_ab_fit(two, 2, &fit, &err), 0, "two samples, two sizes: solvable");
    is_near(fit.alpha_s, 1e-5, 1e-9, "two samples: alpha exact");
    is_near(fit.beta_s_per_byte, 4e-9, 1e-9, "two samples: beta exact");
}

static void test_noise_and_clamp(void)
{
    struct wp_calib_sample s[MAX_SAMPLES];
    int n = synthetic(s, 1024, 20e-6, 1.0 / 1e9);
    for (int i = 0; i < n; i++) /* +-2 % deterministic noise */
        s[i].time_s *= 1 + 0.02 * ((i * 7919 % 11) - 5) / 5.0;
    struct wp_ab_fit fit;
    struct wp_err err = {""};
    is_int(wp_ab_fit(s, n, &fit, &err), 0, "noisy samples fit");
    is_near(fit.beta_s_per_byte, 1.0 / 1e9, 0.03, "beta within 3 %% under 2 %% noise");
    ok(fit.max_rel_residual > 0.005, "residuals show the noise (max %g of a time)", fit.max_rel_residual);
    ok(fit.rms_residual_s > 0, "rms residual is positive");

    /* a negative latency (times below the bandwidth line, large messages
     * only so that every time stays positive): the fit keeps alpha = 0 and
     * fits beta alone */
    n = synthetic(s, 1 << 20, -20e-6, 1.0 / 5e9);
    if (!ok(wp_ab_fit(s, n, &fit, &err) == 0, "negative-latency data fit"))
        printf("# %s\n", err.msg);
    ok(fit.alpha_clamped, "alpha clamped");
    is_near(fit.alpha_s, 0, 0, "clamped alpha is exactly 0");
    is_near(fit.beta_s_per_byte, 1.0 / 5e9, 0.01, "beta fitted alone, within 1 %%");
}

/* fit is left untouched on error; the message contains want. */
static void refused(const struct wp_calib_sample *s, int n, const char *want, const char *what)
{
    struct wp_ab_fit fit = {-1, -1, 0, 0, 0, 0};
    struct wp_err err = {""};
    is_int(wp_ab_fit(s, n, &fit, &err), -1, "%s is refused", what);
    has_substr(err.msg, want, "%s: the message says why", what);
    ok(fit.alpha_s == -1 && fit.beta_s_per_byte == -1, "%s: the fit is untouched", what);
}

static void test_degenerate(void)
{
    struct wp_calib_sample one = {WP_COLL_P2P, 2, 1024, 1e-6};
    refused(NULL, 0, "needs at least 2", "no samples");
    refused(&one, 1, "1 measurement:", "one sample");

    /* allreduce and allgather on 2 ranks at one size move n/2 bytes per step alike */
    struct wp_calib_sample same_ratio[3] = {{WP_COLL_ALLREDUCE, 2, 1 << 20, 2e-3},
                                            {WP_COLL_ALLGATHER, 2, 1 << 20, 1e-3},
                                            {WP_COLL_ALLREDUCE, 2, 1 << 20, 2.1e-3}};
    refused(same_ratio, 3, "cannot tell latency from bandwidth", "one size only");

    struct wp_calib_sample bad[2] = {{WP_COLL_P2P, 2, 1024, 1e-6}, {WP_COLL_P2P, 2, 4096, 0}};
    refused(bad, 2, "sample 1 (p2p, 2 ranks, 4 KiB): time 0 s must be positive", "a zero time");
    bad[1].time_s = NAN;
    refused(bad, 2, "must be positive and finite", "a NaN time");
    bad[1] = (struct wp_calib_sample){WP_COLL_ALLREDUCE, 1, 4096, 1e-6};
    refused(bad, 2, "sample 1 (allreduce): 1 rank, but a collective needs at least 2", "a one-rank collective");
    bad[1] = (struct wp_calib_sample){WP_COLL_P2P, 3, 4096, 1e-6};
    refused(bad, 2, "sample 1 (p2p): 3 ranks, but a message is between exactly 2", "a three-rank p2p");
    bad[1] = (struct wp_calib_sample){WP_COLL_P2P, 2, -5, 1e-6};
    refused(bad, 2, "must be positive", "a negative size");

    struct wp_calib_sample shrinking[3] = {{WP_COLL_P2P, 2, 1024, 3e-3},
                                           {WP_COLL_P2P, 2, 1 << 20, 2e-3},
                                           {WP_COLL_P2P, 2, 1 << 24, 1e-3}};
    refused(shrinking, 3, "do not grow with the message size", "times falling with size");
}

int main(void)
{
    test_model();
    test_exact_recovery();
    test_noise_and_clamp();
    test_degenerate();
    return tap_done();
}

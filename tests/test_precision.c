/* Unit tests of the training precisions (kernels/precision.h): bfloat16
 * rounding against an independent nearest-value reference in double over
 * every tie and its neighbours and a stride of all floats, the special
 * values, TF32 truncation, names, and the bytes per precision. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/precision.h"
#include "tap.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The value of bfloat16 bits h in double, with 0x7f80/0xff80 taken as
 * +-2^128 (where rounding past the largest finite value lands). */
static double bf16_value(uint16_t h)
{
    if ((h & 0x7fffu) == 0x7f80u)
        return (h & 0x8000u) ? -ldexp(1.0, 128) : ldexp(1.0, 128);
    return (double)from_bits((uint32_t)h << 16);
}

/* The nearest bfloat16 to finite f by distances in double, ties to the
 * even mantissa: no bit tricks, so it checks wp_bf16_from_float's. */
static uint16_t reference_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t down = (uint16_t)(u >> 16), up = (uint16_t)(down + 1); /* toward zero, away from zero */
    if ((u & 0xffffu) == 0)
        return down;
    double x = (double)f, dd = fabs(x - bf16_value(down)), du = fabs(bf16_value(up) - x);
    if (dd < du)
        return down;
    if (du < dd)
        return up;
    return (down & 1u) ? up : down;
}

static void test_bf16_specials(void)
{
    ok(wp_bf16_from_float(1.0f) == 0x3f80, "1.0 is 0x3f80");
    ok(wp_bf16_from_float(from_bits(0x40490fdbu)) == 0x4049, "pi rounds down to 0x4049 (3.140625)");
    ok(wp_bf16_from_float(from_bits(0x3f808000u)) == 0x3f80, "1 + 2^-8, a tie, goes to the even 0x3f80");
    ok(wp_bf16_from_float(from_bits(0x3f818000u)) == 0x3f82, "1 + 3 x 2^-8, a tie, goes to the even 0x3f82");
    ok(wp_bf16_from_float(from_bits(0x3f808001u)) == 0x3f81, "just past a tie rounds up");
    ok(wp_bf16_from_float(from_bits(0x7f7fffffu)) == 0x7f80, "the largest float rounds to infinity");
    ok(wp_bf16_from_float(from_bits(0x7f7f7fffu)) == 0x7f7f, "below the halfway point stays finite");
    ok(wp_bf16_from_float(INFINITY) == 0x7f80 && wp_bf16_from_float(-INFINITY) == 0xff80, "infinities stay");
    ok(wp_bf16_from_float(from_bits(0x7fc00001u)) == 0x7fc0, "a quiet NaN stays a NaN");
    ok(wp_bf16_from_float(from_bits(0x7f800001u)) == 0x7fc0,
       "a signalling NaN whose payload is below bit 16 stays a NaN (quieted), not infinity");
    ok(wp_bf16_from_float(from_bits(0xff800001u)) == 0xffc0, "a NaN keeps its sign");
    ok(wp_bf16_from_float(-0.0f) == 0x8000, "-0 keeps its sign");
    ok(wp_bf16_from_float(from_bits(0x00000001u)) == 0x0000, "the smallest subnormal rounds to zero");
    ok(wp_bf16_from_float(from_bits(0x00008000u)) == 0x0000, "a subnormal tie goes to the even zero");
    ok(wp_bf16_from_float(from_bits(0x00018000u)) == 0x0002, "a subnormal tie goes to the even 0x0002");
    ok(wp_bf16_to_float(0x3f80) == 1.0f && wp_bf16_to_float(0xc000) == -2.0f, "bfloat16 to float is exact");
    ok(isnan(wp_bf16_round(NAN)), "rounding a NaN gives a NaN");
    ok(wp_bf16_round(1.00390625f) == 1.0f, "wp_bf16_round(1 + 2^-8) = 1");
}

/* Every tie (low half 0x8000) and its two neighbours for every top half,
 * and every 65,537th float, against the reference. */
static void test_bf16_against_reference(void)
{
    long checked = 0, wrong = 0;
    uint32_t first_wrong = 0;
    for (uint32_t hi = 0; hi < 0x10000u; hi++) {
        if ((hi & 0x7f80u) == 0x7f80u)
            continue; /* infinities and NaNs: test_bf16_specials */
        static const uint32_t lows[] = {0x7fffu, 0x8000u, 0x8001u, 0x0000u, 0xffffu};
        for (size_t i = 0; i < sizeof lows / sizeof lows[0]; i++) {
            uint32_t u = hi << 16 | lows[i];
            float f = from_bits(u);
            checked++;
            if (wp_bf16_from_float(f) != reference_bf16(f) && wrong++ == 0)
                first_wrong = u;
        }
    }
    for (uint64_t u = 0; u < 0x100000000ull; u += 65537u) {
        float f = from_bits((uint32_t)u);
        if (!isfinite(f))
            continue;
        checked++;
        if (wp_bf16_from_float(f) != reference_bf16(f) && wrong++ == 0)
            first_wrong = (uint32_t)u;
    }
    ok(wrong == 0, "bfloat16 rounding equals the nearest-value reference on %ld floats (%ld differ, first 0x%08x)",
       checked, wrong, first_wrong);
}

static void test_tf32(void)
{
    ok(wp_tf32_truncate(1.0f) == 1.0f, "1 is a TF32 value");
    ok(wp_tf32_truncate(from_bits(0x3f801fffu)) == 1.0f, "bits below the 10th mantissa bit are dropped");
    ok(wp_tf32_truncate(from_bits(0x3f802000u)) == from_bits(0x3f802000u), "1 + 2^-10 is kept");
    ok(wp_tf32_truncate(from_bits(0xbf803fffu)) == from_bits(0xbf802000u), "negative values truncate toward zero");
    ok(isinf(wp_tf32_truncate(INFINITY)) && isnan(wp_tf32_truncate(from_bits(0x7f800001u))),
       "infinity stays, a NaN whose payload is in the dropped bits stays a NaN");
    long wrong = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 65537u) {
        float f = from_bits((uint32_t)u);
        if (!isfinite(f))
            continue;
        float t = wp_tf32_truncate(f);
        double ulp = f == 0 ? 0 : ldexp(1.0, ilogb(f) - 10);
        if (fpclassify(f) == FP_SUBNORMAL)
            ulp = ldexp(1.0, -149 + 13);
        if (ulp == 0) { /* zero stays zero */
            wrong += t != 0 || signbit(t) != signbit(f);
            continue;
        }
        int good = signbit(t) == signbit(f) && fabs((double)t) <= fabs((double)f) &&
                   fabs((double)f) - fabs((double)t) < ulp && fmod(fabs((double)t), ulp) == 0;
        wrong += !good;
    }
    ok(wrong == 0, "TF32 truncation keeps every value's sign and leaves less than one TF32 ulp, a multiple of it "
                   "(%ld of every 65,537th float differ)", wrong);
}

static void test_names_and_bytes(void)
{
    for (int p = 0; p < WP_PRECISION_COUNT; p++)
        ok(wp_precision_parse(wp_precision_name((enum wp_precision)p)) == p, "%s parses back",
           wp_precision_name((enum wp_precision)p));
    ok(wp_precision_parse("BF16") == -1 && wp_precision_parse("fp16") == -1 && wp_precision_parse(NULL) == -1,
       "BF16, fp16 and no name are not precisions");
    struct wp_precision_bytes f = wp_precision_bytes(WP_PRECISION_FP32), t = wp_precision_bytes(WP_PRECISION_TF32),
                              b = wp_precision_bytes(WP_PRECISION_BF16);
    ok(f.activation == 4 && f.parameter == 4 && f.gradient == 4 && f.optimizer == 8, "fp32: 4 4 4 8 bytes");
    ok(memcmp(&f, &t, sizeof f) == 0, "tf32 keeps what fp32 keeps");
    ok(b.activation == 2 && b.parameter == 2 && b.gradient == 4 && b.optimizer == 12,
       "bf16: 2-byte activations and weights, fp32 gradients, master weights and moments");
    ok(b.parameter + b.gradient + b.optimizer == 18, "bf16 keeps 18 bytes a parameter (Megatron-LM)");
}

int main(void)
{
    test_bf16_specials();
    test_bf16_against_reference();
    test_tf32();
    test_names_and_bytes();
    return tap_done();
}

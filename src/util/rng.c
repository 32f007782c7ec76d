/* xoshiro256** seeded through splitmix64. */
#include "util/rng.h"

#include <math.h>

static unsigned long long splitmix64(unsigned long long *x)
{
    unsigned long long z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void wp_rng_seed(struct wp_rng *r, unsigned long long seed, unsigned long long stream)
{
    unsigned long long x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static unsigned long long rotl(unsigned long long x, int k)
{
    return (x << k) | (x >> (64 - k));
}

unsigned long long wp_rng_next(struct wp_rng *r)
{
    unsigned long long *s = r->s;
    unsigned long long result = rotl(s[1] * 5, 7) * 9;
    unsigned long long t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double wp_rng_uniform(struct wp_rng *r)
{
    return (double)(wp_rng_next(r) >> 11) * 0x1.0p-53;
}

double wp_rng_normal(struct wp_rng *r)
{
    double u1 = wp_rng_uniform(r), u2 = wp_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

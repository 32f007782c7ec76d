/* A small deterministic random generator (splitmix64 seeding, xoshiro256**)
 * so that parameters and synthetic data are the same on every rank and
 * every machine, whatever the C library. */
#ifndef WP_UTIL_RNG_H
#define WP_UTIL_RNG_H

struct wp_rng {
    unsigned long long s[4];
};

/* Stream `stream` of seed `seed`: independent streams per tensor. */
void wp_rng_seed(struct wp_rng *r, unsigned long long seed, unsigned long long stream);
unsigned long long wp_rng_next(struct wp_rng *r);
double wp_rng_uniform(struct wp_rng *r); /* [0, 1) */
double wp_rng_normal(struct wp_rng *r);  /* N(0, 1), Box-Muller */

#endif

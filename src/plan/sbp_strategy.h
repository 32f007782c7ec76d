/* SBP strategies a user names rather than searches for, as one mesh per
 * layer for wp_sbp_evaluate and the executor (run/comm/sbp_exec.h): Megatron's
 * 1D split, data parallelism, or meshes written out. */
#ifndef WP_PLAN_SBP_STRATEGY_H
#define WP_PLAN_SBP_STRATEGY_H

#include <stddef.h>

#include "plan/sbp.h"

/* Fills meshes[0 .. pr->nlayers-1] from spec:
 *   "megatron"  Megatron-LM's MLP over all p devices: even layers
 *               column-parallel (1, p, 1), odd layers row-parallel
 *               (1, 1, p); each axis of p devices spans the N nodes x G GPUs
 *   "dp"        data parallelism: (p, 1, 1) on every layer
 *   MESH,...    P0xP1xP2[@N0xN1xN2] per layer (P0 P1 P2 = p), repeated
 *               over the layers when fewer are given; @ gives the nodes of
 *               each axis (the GPUs are the rest, Pk / Nk), needed only
 *               where more than one split of N x G fits the mesh.
 * Errors name the mesh that does not fit. Validity for each layer's
 * shapes is wp_sbp_evaluate's to check. */
int wp_sbp_strategy_meshes(const struct wp_sbp_problem *pr, const char *spec, struct wp_sbp_mesh *meshes,
                           struct wp_err *err);

/* m as P0xP1xP2@N0xN1xN2, the form wp_sbp_strategy_meshes reads. */
void wp_sbp_mesh_format(const struct wp_sbp_mesh *m, char *buf, size_t size);

#endif

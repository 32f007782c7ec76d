/* Campaign files (format "wavepipe-campaign", libconfig): reading them
 * through the schema checker, validating every value that can reach a job
 * script (safe names [A-Za-z0-9._-]+, numbers in range, file:line errors),
 * and expanding them into points: the cartesian product of the axes, with
 * zip groups (axes that advance together) and exclude rules, weak or strong
 * scaling (global batch and layers derived per point), repetitions, and a
 * stable, safe id per point. The format is described in templates/README.md.
 *
 *   format = "wavepipe-campaign"; version = 1;
 *   name = "cpu-weak-test"; template = "run-cpu"; model = "jobs/models/gpt-tiny.cfg";
 *   scaling = "weak"; global_batch_per_node = 4; layers_per_node = 4;   (weak)
 *   scaling = "strong"; global_batch = 192;                             (strong)
 *   layers = 128;        (optional: the model's layer count for every point, or
 *                         the base of weak scaling without layers_per_node)
 *   steps = 4; warmup = 1; repetitions = 1; save_every = 2;
 *   keep_checkpoints = 2;  (optional: run --keep, step directories kept; 0: all)
 *   adapt_every = 10;    (optional: run --adapt-every for points of axis adapt)
 *   watchdog_s = 6;      (optional: run --watchdog-s, the wait that ends a job
 *                         which lost a rank or node; default: the run's)
 *   adapt_candidates = "2:1,4:1";  (optional: run --adapt-candidates where k is tuned)
 *   compute = "emulated"; layer_table = "TABLE";  (optional: run --compute emulated
 *                         --layers TABLE; model is then optional, template run-emulated)
 *   scenarios = { NAME = ["20 slow 1 2", ...]; };  scenario_hook = "PROGRAM";
 *                        (optional: timed changes, axis scenario; scenarios.h)
 *   launcher = "srun" | "mpiexec"; device = "cpu" | "cuda";
 *   recover = "replan"; min_nodes = 2; max_recoveries = 3;
 *                        (optional: after a lost node the point is submitted
 *                         again without it and re-planned: recovery.h)
 *   slurm = { partition = "wp"; time = "00:10:00"; cpus_per_task = 1; ... };
 *                        (signal_warning_s = 120: run jobs' --signal=B:USR1@120,
 *                         0 none; requeue = true: --requeue, false --no-requeue)
 *   axes = { schedule = ["1f1b", "kfkb"]; k = [2]; nodes = [1, 2, 3]; adapt = ["none", "k"]; scenario = ["none", "NAME"]; ... };
 *                        (data_parallel = [1, 2]: run --data-parallel D, D copies
 *                         of the pipeline on the point's ranks, any schedule)
 *   zip = ( ["nodes", "ranks_per_node"] );
 *   exclude = ( { schedule = "!kfkb"; k = "!1"; } );
 */
#ifndef WP_CAMPAIGN_CAMPAIGN_H
#define WP_CAMPAIGN_CAMPAIGN_H

#include "campaign/point.h"
#include "campaign/recovery.h"
#include "campaign/scenarios.h"
#include "util/error.h"

#define WP_CAMPAIGN_MAX_AXES 16
#define WP_CAMPAIGN_MAX_VALUES 64
#define WP_CAMPAIGN_MAX_ZIP 8
#define WP_CAMPAIGN_MAX_EXCLUDE 32
#define WP_CAMPAIGN_MAX_EXTRA 16
#define WP_CAMPAIGN_MAX_POINTS 4096
#define WP_CAMPAIGN_PATH_MAX 4096

struct wp_campaign_axis {
    char name[WP_POINT_NAME_MAX];
    int nvalues;
    char values[WP_CAMPAIGN_MAX_VALUES][WP_POINT_NAME_MAX];
    int zip_group; /* -1, or the index of the zip group it belongs to */
};

/* One condition of an exclude rule: axis matches one of values (or, when
 * negate, none of them). */
struct wp_campaign_cond {
    int axis;
    int negate;
    int nvalues;
    char values[WP_CAMPAIGN_MAX_VALUES][WP_POINT_NAME_MAX];
};

struct wp_campaign_rule {
    int nconds;
    struct wp_campaign_cond conds[WP_CAMPAIGN_MAX_AXES];
};

struct wp_campaign_slurm {
    char partition[WP_POINT_NAME_MAX], account[WP_POINT_NAME_MAX], qos[WP_POINT_NAME_MAX];
    char constraint[256];
    char time[32];
    int cpus_per_task;
    int gpus_per_node; /* 0: ranks_per_node when device is cuda, else none */
    int signal_warning_s; /* run jobs: --signal=B:USR1@this before the time limit (0: none) */
    int requeue;          /* run jobs: --requeue, and a stopped run requeues itself */
    int nextra;
    char extra[WP_CAMPAIGN_MAX_EXTRA][256];
};

struct wp_campaign {
    char path[WP_CAMPAIGN_PATH_MAX];
    char name[WP_POINT_NAME_MAX];
    char template_name[WP_POINT_NAME_MAX];
    char model_path[WP_CAMPAIGN_PATH_MAX]; /* resolved, absolute */
    char data_path[WP_CAMPAIGN_PATH_MAX];  /* resolved, absolute; "" for the default corpus */
    char scaling[16];                      /* "weak" or "strong" */
    int global_batch;                      /* strong: fixed; weak: per node */
    int layers_per_node;                   /* weak, optional (0: the model's layers) */
    int model_layers;                      /* from the model file, or the campaign's 'layers' */
    int layers_fixed;                      /* the campaign gave 'layers' */
    int default_micro_batches;             /* from the model file, when not swept */
    int steps, warmup, repetitions, save_every;
    int keep_checkpoints; /* run --keep: step directories kept in ckpt/ (0: all) */
    int adapt_every; /* run --adapt-every where a point adapts (default 10) */
    int watchdog_s;  /* run --watchdog-s (0: not given, the run's default) */
    char adapt_candidates[256]; /* run --adapt-candidates where a point tunes k ("": the run's default) */
    char launcher[16]; /* "srun" or "mpiexec" */
    char device[8];    /* "cpu" or "cuda" */
    char compute[16];  /* "real" or "emulated" (run --compute) */
    char layer_table_path[WP_CAMPAIGN_PATH_MAX];  /* emulated: resolved, absolute */
    double dilation, byte_scale; /* emulated: run --dilate, --scale-bytes (1: not given) */
    char scenario_hook_path[WP_CAMPAIGN_PATH_MAX]; /* run --changes-hook; "" without */
    struct wp_scenarios scenarios;
    struct wp_campaign_slurm slurm;
    struct wp_recovery_policy recovery; /* recover, min_nodes, max_recoveries */
    int naxes;
    struct wp_campaign_axis axes[WP_CAMPAIGN_MAX_AXES];
    int nzip;
    int nrules;
    struct wp_campaign_rule rules[WP_CAMPAIGN_MAX_EXCLUDE];
};

/* A point of the expanded campaign, ready to render. */
struct wp_campaign_point {
    struct wp_point point; /* id, axes (campaign order, nodes always, global_batch, layers) */
    int index;             /* position in the expansion (before repetitions) */
    char schedule[WP_POINT_NAME_MAX];
    char policy[8];
    char adapt[16]; /* none, k, partition or both: run --adapt */
    char precision[8]; /* fp32, tf32 or bf16: run --precision (fp32 unless the point sweeps it) */
    char scenario[WP_POINT_NAME_MAX]; /* a name in the campaign's scenarios, or "none" */
    char model_name[WP_POINT_NAME_MAX];
    int k, waves, chunks, micro_batches, nodes, ranks_per_node, global_batch, layers;
    int data_parallel; /* run --data-parallel: copies of the pipeline over the point's ranks (1: one) */
};

/* Axis names a campaign may sweep (NULL-terminated). */
extern const char *const wp_campaign_axis_names[];

/* Reads and validates a campaign file. Errors read "file:line: message". */
int wp_campaign_read(const char *path, struct wp_campaign *c, struct wp_err *err);

/* Expands c into *points (malloc'ed, *npoints of them, repetitions included),
 * checks each point (batch splits into micro-batches, enough layers for the
 * stages) and gives it its id. Returns -1 with a message naming the point. */
int wp_campaign_expand(const struct wp_campaign *c, struct wp_campaign_point **points, int *npoints,
                       struct wp_err *err);


/* A path a campaign names, as its sweep looks it up: absolute as it is;
 * relative, beside the campaign file, then in the installed data directory
 * (PREFIX/share/wavepipe; the source tree for the build tree's program),
 * then from the current directory. The absolute path into out, or -1 with
 * the places tried (", "-separated) in tried (may be NULL). */
int wp_campaign_find(const char *campaign_path, const char *rel, char *out, size_t size, char *tried,
                     size_t tried_size);

#endif

/* The subcommands of `wavepipe`, one file each (cmd_<name>.c): each parses
 * its options, prints its usage and calls the library; main.c dispatches. */
#ifndef WP_CMD_COMMANDS_H
#define WP_CMD_COMMANDS_H

struct wp_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

/* argv[0] is the subcommand. */
int wp_cmd_topo(int argc, char **argv);
int wp_cmd_probe(int argc, char **argv);
int wp_cmd_calibrate(int argc, char **argv);
int wp_cmd_profile(int argc, char **argv);
int wp_cmd_plan(int argc, char **argv);
int wp_cmd_schedule(int argc, char **argv);
int wp_cmd_simulate(int argc, char **argv);
int wp_cmd_sbp(int argc, char **argv);
int wp_cmd_run(int argc, char **argv);
int wp_cmd_sweep(int argc, char **argv);
int wp_cmd_status(int argc, char **argv);
int wp_cmd_recover(int argc, char **argv);
int wp_cmd_harvest(int argc, char **argv);

#endif

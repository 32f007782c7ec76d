/* Running gnuplot on the harvest's scripts (gnuplot.h): the terminals
 * write no time stamps, so two harvests give identical SVG and PNG. */
#include "campaign/gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const terminals[WP_GNUPLOT_TERMINALS][2] = {
    {"svg size 900,540 fixed noenhanced font \"sans,12\" background rgb \"white\"", "svg"},
    {"pngcairo size 900,540 noenhanced font \"sans,10\" background rgb \"white\"", "png"}};

int wp_gnuplot_open(struct wp_atomic_file *af, const char *dir, const char *name, const char *ext,
                    struct wp_err *err)
{
    char path[4400];
    if ((size_t)snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext) >= sizeof path)
        return wp_errorf(err, "path too long: %s/%s.%s", dir, name, ext);
    return wp_atomic_open(af, path, err);
}

void wp_gnuplot_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

void wp_gnuplot_output(FILE *fp, int t, const char *name)
{
    fprintf(fp, "set terminal %s\nset output '%s.%s.tmp'\n", terminals[t][0], name, terminals[t][1]);
}

/* Runs `gnuplot SCRIPT` in dir. 0 ok, 1 gnuplot failed, 127 not installed. */
static int run_gnuplot(const char *dir, const char *script, FILE *log)
{
    const char *prog = getenv("WP_GNUPLOT");
    if (!prog || !*prog)
        prog = "gnuplot";
    int pfd[2];
    if (pipe(pfd) || fcntl(pfd[0], F_SETFD, FD_CLOEXEC) || fcntl(pfd[1], F_SETFD, FD_CLOEXEC)) {
        fprintf(log, "cannot run %s: %s\n", prog, strerror(errno));
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    fflush(log);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(log, "cannot run %s: %s\n", prog, strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return 1;
    }
    if (pid == 0) {
        int e = 0;
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        if (chdir(dir) == 0) {
            char *const argv[] = {(char *)prog, (char *)script, NULL};
            execvp(prog, argv);
        }
        e = errno;
        if (write(pfd[1], &e, sizeof e) < 0)
            _exit(126);
        _exit(127);
    }
    close(pfd[1]);
    int child_errno = 0;
    ssize_t got;
    do
        got = read(pfd[0], &child_errno, sizeof child_errno);
    while (got < 0 && errno == EINTR);
    close(pfd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got == (ssize_t)sizeof child_errno) {
        if (child_errno == ENOENT)
            return 127;
        fprintf(log, "cannot run %s in %s: %s\n", prog, dir, strerror(child_errno));
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(log, "%s/%s: gnuplot failed (%s %d)\n", dir, script, WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return 1;
    }
    return 0;
}

int wp_gnuplot_draw(const char *dir, const char *name, FILE *log)
{
    char script[4200];
    snprintf(script, sizeof script, "%s.gp", name);
    int g = run_gnuplot(dir, script, log);
    if (g == 127)
        return 127;
    for (int t = 0; t < WP_GNUPLOT_TERMINALS; t++) {
        char tmp[8500], final[8500];
        snprintf(tmp, sizeof tmp, "%s/%s.%s.tmp", dir, name, terminals[t][1]);
        snprintf(final, sizeof final, "%s/%s.%s", dir, name, terminals[t][1]);
        if (g == 0 && rename(tmp, final)) {
            fprintf(log, "cannot rename %s: %s\n", tmp, strerror(errno));
            g = 1;
        } else if (g) {
            unlink(tmp);
        }
    }
    return g;
}

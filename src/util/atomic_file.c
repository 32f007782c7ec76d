/* Files written whole or not at all (temporary name, fsync, rename). */
#include "util/atomic_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int wp_atomic_open(struct wp_atomic_file *af, const char *path, struct wp_err *err)
{
    memset(af, 0, sizeof *af);
    if (strlen(path) >= sizeof af->path)
        return wp_errorf(err, "path too long: %s", path);
    snprintf(af->path, sizeof af->path, "%s", path);
    snprintf(af->tmp_path, sizeof af->tmp_path, "%s.tmp.%ld", path, (long)getpid());
    af->fp = fopen(af->tmp_path, "w");
    if (!af->fp)
        return wp_errorf(err, "cannot write %s: %s", af->tmp_path, strerror(errno));
    return 0;
}

int wp_atomic_commit(struct wp_atomic_file *af, struct wp_err *err)
{
    int failed = fflush(af->fp) != 0 || ferror(af->fp);
    if (!failed)
        failed = fsync(fileno(af->fp)) != 0 && errno != EINVAL;
    int saved = errno;
    if (fclose(af->fp) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    af->fp = NULL;
    if (failed) {
        unlink(af->tmp_path);
        return wp_errorf(err, "cannot write %s: %s", af->path, strerror(saved));
    }
    if (rename(af->tmp_path, af->path) != 0) {
        saved = errno;
        unlink(af->tmp_path);
        return wp_errorf(err, "cannot rename %s to %s: %s", af->tmp_path, af->path, strerror(saved));
    }
    return 0;
}

void wp_atomic_abort(struct wp_atomic_file *af)
{
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
    }
    if (af->tmp_path[0])
        unlink(af->tmp_path);
}

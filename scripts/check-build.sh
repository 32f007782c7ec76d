#!/bin/sh
# Builds and tests a copy of the distribution in a build of its own, for the
# CI passes that need other compiler flags (make check-sanitized, make
# check-fuzz): moves DISTDIR (just made by `make distdir`) to BUILD/src,
# configures BUILD/build from it once with CONFIGURE_ARGS (later runs rebuild
# what changed), builds, and runs `make MAKE_ARGS` there. The test results
# are BUILD/build/test-suite.log.
# usage: check-build.sh DISTDIR BUILD "CONFIGURE_ARGS" "MAKE_ARGS"
set -eu
distdir=$1 build=$2 configure_args=$3 make_args=$4
make=${MAKE:-make}
jobs=${WP_JOBS:-2}
# the calling make's jobserver does not reach this script's makes
unset MAKEFLAGS MFLAGS
start=$(date +%s)
if [ -d "$build/src" ]; then
    chmod -R u+w "$build/src"
    rm -rf "$build/src"
fi
mkdir -p "$build/build"
mv "$distdir" "$build/src"
src=$(cd "$build/src" && pwd)
cd "$build/build"
if [ ! -f Makefile ]; then
    # shellcheck disable=SC2086 # the arguments are a list
    "$src/configure" $configure_args > configure.log 2>&1 || {
        tail -n 30 configure.log
        echo "check-build: configure $configure_args failed in $build/build (configure.log)"
        exit 1
    }
fi
$make -j"$jobs"
status=0
eval "$make -j$jobs $make_args" || status=$?
echo "check-build: $build ($configure_args): $make_args exited $status after $(( $(date +%s) - start )) s"
exit $status
